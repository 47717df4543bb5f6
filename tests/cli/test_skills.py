"""gitkb's Agent Skills: each one valid (the Agent Skills reference validator), each command
it names a real `git kb` command with real options, and `git kb skills export` writing them
where each agent looks."""

from __future__ import annotations

import importlib
import json
import re
import shlex

import click
import pytest
from helpers import kb

from gitkb.agents import skills
from gitkb.cli import COMMANDS
from gitkb.errors import GitkbError

NAMES = ["gitkb-distill", "gitkb-mine", "gitkb-optimize", "gitkb-warm-start"]
FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"`(git kb [^`]+)`")
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", "2>", "<", "&"}


def commands_named(text: str) -> list[list[str]]:
    """The `git kb` command lines a skill names: each line of a code block that starts with
    `git kb`, and each inline `git kb ...` span; as words, up to the first shell operator."""
    lines = [line for block in FENCE.findall(text) for line in block.splitlines()]
    lines += INLINE.findall(text)
    found = []
    for line in lines:
        if not line.strip().startswith("git kb "):
            continue
        words = []
        for word in shlex.split(line):
            if word in SHELL_OPERATORS or word.startswith((">", "2>")):
                break
            words.append(word)
        found.append(words[2:])
    return found


def verb_and_options(words: list[str]) -> tuple[list[str], set[str]]:
    """(the verb, and its subcommand for a group; the options the line passes)."""
    verb = words[0]
    assert verb in COMMANDS, f"git kb {verb}: no such verb"
    command = importlib.import_module(f"gitkb.commands.{COMMANDS[verb][0]}").command
    path = [verb]
    if isinstance(command, click.Group):
        path.append(words[1])
    options = {w.split("=", 1)[0] for w in words if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", w)}
    return path, options


def stale_options(help_text: str, options: set[str]) -> list[str]:
    """The options a command line passes that its help does not list."""
    return sorted(o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])",
                                                      help_text))  # fmt: skip


def test_the_package_ships_one_skill_per_job():
    shipped = skills.shipped()
    assert [s.name for s in shipped] == NAMES
    for skill in shipped:
        text = skill.text.decode()
        assert 40 < len(skill.description) <= 1024, skill.name
        assert "Use when" in skill.description or "Use before" in skill.description
        for heading in ("## When to use it", "## Never"):
            assert heading in text, (skill.name, heading)
        assert commands_named(text), f"{skill.name} names no git kb command"


def test_every_skill_passes_the_reference_validator(tmp_path):
    validator = pytest.importorskip("skills_ref", reason="skills-ref is not installed")
    done = skills.export(tmp_path, "generic")
    assert [e.name for e in done] == NAMES
    for exported in done:
        folder = tmp_path / exported.name
        assert validator.validate(folder) == [], exported.name
        assert validator.read_properties(folder).name == exported.name
    # the validator is not a rubber stamp: a name that is not its folder's is refused
    broken = tmp_path / "gitkb-other"
    broken.mkdir()
    (broken / "SKILL.md").write_bytes((tmp_path / NAMES[0] / "SKILL.md").read_bytes())
    assert validator.validate(broken)


@pytest.mark.slow
def test_every_command_a_skill_names_is_real():
    """Each `git kb` command line in a skill runs with -h, and every option it passes is
    one its help lists: a renamed verb or flag fails here, not in an agent's hands."""
    lines = [words for s in skills.shipped() for words in commands_named(s.text.decode())]
    wanted: dict[tuple[str, ...], set[str]] = {}
    for words in lines:
        path, options = verb_and_options(words)
        wanted.setdefault(tuple(path), set()).update(options)
    assert {p[0] for p in wanted} >= {"mine", "recon", "validate", "query", "show", "resolve",
                                      "feedback", "attest", "optimize"}  # fmt: skip
    for path, options in sorted(wanted.items()):
        done = kb(*path, "-h")
        assert done.returncode == 0, (path, done.stderr)
        assert stale_options(done.stdout.decode(), options) == [], path


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def flags_of(command: click.Command) -> set[str]:
    """Every long option of a command, and of each subcommand of a group."""
    flags = {o for p in command.params if isinstance(p, click.Option)
             for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}  # fmt: skip
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            flags |= flags_of(sub)
    return flags


def stray_flags(text: str) -> list[str]:
    """The ``--flags`` anywhere in a skill (prose and examples alike) that no verb the
    skill names with ``git kb`` takes."""
    verbs = {verb_and_options(words)[0][0] for words in commands_named(text)}
    taken: set[str] = {"--help"}
    for verb in verbs:
        taken |= flags_of(importlib.import_module(f"gitkb.commands.{COMMANDS[verb][0]}").command)
    return sorted(set(FLAG.findall(text)) - taken)


def test_every_flag_a_skill_mentions_belongs_to_a_verb_it_names():
    for skill in skills.shipped():
        assert stray_flags(skill.text.decode()) == [], skill.name
    made_up = "Run `git kb query --arch sm_90`, or pass `--skill x` to your agent.\n"
    assert stray_flags(made_up) == ["--skill"]


@pytest.mark.slow
def test_the_command_check_finds_a_stale_option():
    words = commands_named("```\ngit kb query --arch sm_90 --no-such-flag x\n```\n")[0]
    path, options = verb_and_options(words)
    assert path == ["query"] and options == {"--arch", "--no-such-flag"}
    assert stale_options(kb(*path, "-h").stdout.decode(), options) == ["--no-such-flag"]


@pytest.mark.parametrize(
    "agent, folder", [("claude", ".claude/skills"), ("codex", ".agents/skills"), ("generic", "")]
)
def test_export_writes_where_each_agent_looks(tmp_path, agent, folder):
    done = skills.export(tmp_path, agent)
    base = tmp_path / folder if folder else tmp_path
    assert [e.path for e in done] == [str(base / n / "SKILL.md") for n in NAMES]
    for skill in skills.shipped():
        assert (base / skill.name / "SKILL.md").read_bytes() == skill.text
    assert all(e.written for e in done)
    assert not any(e.written for e in skills.export(tmp_path, agent))  # already so


def test_export_refuses_to_overwrite_an_edited_skill(tmp_path):
    skills.export(tmp_path, "codex")
    base = tmp_path / ".agents" / "skills"
    edited = base / "gitkb-mine" / "SKILL.md"
    edited.write_text("my own notes\n")
    (base / "gitkb-optimize" / "SKILL.md").unlink()
    with pytest.raises(GitkbError, match="exists with other content; pass --force"):
        skills.export(tmp_path, "codex")
    assert edited.read_text() == "my own notes\n"
    assert not (base / "gitkb-optimize" / "SKILL.md").exists()  # nothing written at all
    done = skills.export(tmp_path, "codex", force=True)
    assert [e.name for e in done if e.written] == ["gitkb-mine", "gitkb-optimize"]
    with pytest.raises(GitkbError, match="unknown agent"):
        skills.export(tmp_path, "cursor")
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / ".claude").write_text("a file where the folder goes\n")
    with pytest.raises(GitkbError, match="cannot write there"):
        skills.export(blocked, "claude")


@pytest.mark.slow
def test_skills_export_command(tmp_path):
    done = kb("skills", "export", str(tmp_path), "--agent", "claude")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["agent"] == "claude"
    assert [s["name"] for s in answer["skills"]] == NAMES
    assert (tmp_path / ".claude" / "skills" / "gitkb-distill" / "SKILL.md").is_file()
    (tmp_path / ".claude" / "skills" / "gitkb-distill" / "SKILL.md").write_text("edited\n")
    refused = kb("skills", "export", str(tmp_path), "--agent", "claude")
    assert refused.returncode == 1 and refused.stderr.decode().startswith("gitkb: ")
    assert len(refused.stderr.decode().strip().splitlines()) == 1
    wrong = kb("skills", "export", str(tmp_path), "--agent", "cursor")
    assert wrong.returncode == 2
    listed = json.loads(kb("skills", "list").stdout)
    assert [s["name"] for s in listed] == NAMES
