"""Every `git kb` command the documents show is a real verb with real flags and choices:
README.md, CONTRIBUTING.md and docs/*.md, in code blocks and in inline code alike."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import ROOT, kb

from gitkb.cli import COMMANDS

DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`(git kb [^`]+)`")
COMMENT = re.compile(r"\s#.*$")  # a shell comment after a command
# Where a command starts in a code block: a line's start, or after a shell operator.
STARTS = re.compile(r"(?:^\s*|(?:&&|\|\||;|\||\$)\s+)(git kb )")
ENDS = {"&&", "||", ";", "|", ">", ">>", "2>&1"}
# A word that stands for a value the reader fills in: VERB, FILE..., <label>, ...
PLACEHOLDER = re.compile(r"^([A-Z][A-Z0-9_]*(\.\.\.)?|.*<.*>.*|\.\.\.)$")


@dataclass(frozen=True, slots=True)
class Shown:
    """One `git kb ...` command line a document shows."""

    where: str  # file:line
    words: tuple[str, ...]  # what follows `git kb`


def _commands_in(text: str) -> list[tuple[int, str]]:
    """(line number, the text from `git kb` on) for each command in ``text``'s code blocks
    and inline code."""
    found: list[tuple[int, str]] = []
    for block in FENCE.finditer(text):
        first = text.count("\n", 0, block.start(1)) + 1
        joined = block.group(1).replace("\\\n", " \n")  # continuation lines stay countable
        for offset, line in enumerate(joined.split("\n")):
            line = COMMENT.sub("", line.replace(" \n", " "))
            found += [(first + offset, line[m.start(1) :]) for m in STARTS.finditer(line)]
    outside = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for match in INLINE.finditer(outside):
        found.append((outside.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


def _shown(path: Path) -> list[Shown]:
    out = []
    for line, command in _commands_in(path.read_text(encoding="utf-8")):
        words = []
        for word in shlex.split(command)[2:]:
            if word in ENDS:
                break
            words.append(word)
        out.append(Shown(f"{path.relative_to(ROOT)}:{line}", tuple(words)))
    return out


def _group() -> click.Group:
    from gitkb.cli import cli  # built on first use: the module's __getattr__

    assert isinstance(cli, click.Group)
    return cli


def _option(command: click.Command, flag: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and flag in (*param.opts, *param.secondary_opts):
            return param
    return None


def _takes_value(option: click.Option) -> bool:
    return not option.is_flag and not option.count and option.nargs != 0


def _bad_choice(param: click.Parameter, value: str) -> str | None:
    if not isinstance(param.type, click.Choice) or PLACEHOLDER.match(value):
        return None
    wrong = [v for v in value.split("|") if v not in param.type.choices]
    return f"{param.name}: {', '.join(wrong)} not in {list(param.type.choices)}" if wrong else None


def problems(shown: Shown) -> tuple[list[str], tuple[str, ...]]:
    """What is wrong with one shown command (empty when nothing), and the command path
    (verb, and sub-verb for a group) it names; () when the verb is a placeholder."""
    group = _group()
    ctx = click.Context(group)
    words = [w.strip("[]") for w in shown.words]
    words = [w for w in words if w]
    while words and words[0].startswith("-"):  # git kb -q VERB, git kb --help
        if _option(group, words[0]) is None and words[0] not in ("-h", "--help"):
            return [f"git kb has no option {words[0]}"], ()
        words.pop(0)
    if not words or PLACEHOLDER.match(words[0]):
        return [], ()
    verb = words.pop(0)
    if verb not in COMMANDS:
        return [f"no verb {verb!r}"], ()
    command = group.get_command(ctx, verb)
    assert command is not None
    path: tuple[str, ...] = (verb,)
    if isinstance(command, click.Group):
        if not words or words[0].startswith("-"):
            return [], path
        sub = words.pop(0)
        found = command.get_command(ctx, sub)
        if found is None:
            return [f"git kb {verb} has no sub-verb {sub!r}"], path
        command, path = found, (verb, sub)
    wrong: list[str] = []
    positional: list[str] = []
    while words:
        word = words.pop(0)
        if not word.startswith("-") or word == "-":
            positional.append(word)
            continue
        for flag in word.split("|"):  # --show|--check|--write: one of these
            name, _, inline_value = flag.partition("=")
            option = _option(command, name) if name not in ("-h", "--help") else None
            if option is None:
                if name not in ("-h", "--help"):
                    wrong.append(f"git kb {' '.join(path)} has no option {name}")
                continue
            if not _takes_value(option) or "|" in word:
                continue
            value = inline_value or (words.pop(0) if words and not words[0].startswith("-") else "")
            if value and (bad := _bad_choice(option, value)):
                wrong.append(f"git kb {' '.join(path)} {name}: {bad}")
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    for argument, value in zip(arguments, positional, strict=False):
        if argument.nargs == -1:
            break
        if bad := _bad_choice(argument, value):
            wrong.append(f"git kb {' '.join(path)}: {bad}")
    return wrong, path


ALL_SHOWN = [(doc, shown) for doc in DOCUMENTS for shown in _shown(doc)]


def test_the_documents_show_commands() -> None:
    names = {doc.name for doc, _ in ALL_SHOWN}
    assert {"README.md", "mining.md", "sharing.md", "retrieval.md", "optimize.md"} <= names
    assert len(ALL_SHOWN) >= 60


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_every_command_shown_is_a_real_verb_with_real_flags(document: Path) -> None:
    found = [
        f"{shown.where}: {problem}"
        for doc, shown in ALL_SHOWN
        if doc == document
        for problem in problems(shown)[0]
    ]
    assert found == []


def test_every_verb_shown_answers_help_in_process() -> None:
    runner = CliRunner()
    paths = sorted({problems(shown)[1] for _, shown in ALL_SHOWN} - {()})
    assert len(paths) >= 15
    for path in paths:
        result = runner.invoke(_group(), [*path, "-h"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output, path


@pytest.mark.parametrize(
    "shown, expected",
    [
        (("mine", "TRACE", "--dry-run"), []),
        (("mine", "TRACE", "--dry-runn"), ["git kb mine has no option --dry-runn"]),
        (("minee", "TRACE"), ["no verb 'minee'"]),
        (("hooks", "instal"), ["git kb hooks has no sub-verb 'instal'"]),
        (("import", "geek", "DIR"), ["git kb import: kind: geek not in ['gpu-wiki', 'geak', "]),
        (("attest", "ID", "--outcome", "validated|fine"), ["git kb attest --outcome: outcome:"]),
        (("list", "[--type", "--vendor]", "[--json]"), []),
        (("schema", "--show|--check|--writ"), ["git kb schema has no option --writ"]),
        (("VERB", "-h"), []),
    ],
)
def test_the_check_catches_drift(shown: tuple[str, ...], expected: list[str]) -> None:
    found, _ = problems(Shown("here", shown))
    assert len(found) == len(expected)
    for problem, start in zip(found, expected, strict=True):
        assert problem.startswith(start), problem


@pytest.mark.slow
def test_every_verb_shown_answers_help_from_the_command_line() -> None:
    for path in sorted({problems(shown)[1] for _, shown in ALL_SHOWN} - {()}):
        done = kb(*path, "-h")
        assert done.returncode == 0, (path, done.stderr)
        assert b"Usage:" in done.stdout, path
