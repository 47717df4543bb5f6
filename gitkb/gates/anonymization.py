"""Store gate `anonymization` (spec 4.3, gitkb rule 5): nothing private in what an agent reads.

Scanned: every string value (never a key) under ``payload``, ``retrieval``,
``evidence.summary`` and ``worth.gain``. A string under a code key
(``snippet``, ``dispatch_snippet``, ``attempted_code``, at any depth below it)
is code, and only its comment text is scanned: verbatim code legitimately
holds paths and addresses, its comments are prose someone wrote.

Each match of a leak pattern is one finding; each denylisted substring found in
a record's scanned text is one finding. The denylist file is named by
``GITKB_DENYLIST`` (else ``ATREX_WIKI_DENYLIST``), read at check time and
cached by path, mtime and size.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from gitkb.gates import Finding, Gate, GateContext, first_of_type
from gitkb.record import dig
from gitkb.trace.scrub import denylist_file, read_denylist

NAME = "anonymization"

CODE_KEYS = frozenset({"snippet", "dispatch_snippet", "attempted_code"})
SCANNED_SUBTREES = (("payload",), ("retrieval",), ("evidence", "summary"), ("worth", "gain"))

# '/root/', '/home/' or '/Users/' and the path component after it: someone's home directory.
ABSOLUTE_PATH = re.compile(r"/(?:root|home|Users)/[\w.-]+")
# An email address: a local part of 2+ characters not glued to a word character, '.' or '@'
# before it, '@', one domain label, '.', and a lowercase top-level part ending at a word boundary.
EMAIL = re.compile(r"(?<![\w.@])[\w.+-]{2,}@[\w-]+\.[a-z]{2,}\b")
# A markdown page name: a word, then word characters, '/' or '-', then '.md' as a whole word.
MARKDOWN_PAGE = re.compile(r"\b\w[\w/-]*\.md\b")

# (what it is, pattern, a literal every match contains: a cheap test that skips the search)
LEAK_PATTERNS = (
    ("absolute path", ABSOLUTE_PATH, "/"),
    ("email address", EMAIL, "@"),
    ("markdown page name", MARKDOWN_PAGE, ".md"),
)

COMMENT_LINE_STARTS = ("#", "//", "*", "/*")
# What free text outside a record (a mining report) may not hold: a report names the
# trace's own files (REPORT.md) by design, never someone's home or address.
PRIVATE_PATTERNS = LEAK_PATTERNS[:2]


def private_leaks(text: str) -> list[str]:
    """Each home path and email address in ``text``, described (empty: none)."""
    return [
        f"{what} {match.group()!r}"
        for what, pattern, literal in PRIVATE_PATTERNS
        if literal in text
        for match in pattern.finditer(text)
    ]


# --- what is scanned ----------------------------------------------------------------------


def child_path(path: str, key: str | int) -> str:
    """The dotted JSON path of a child: ``a.b`` for a key, ``a[0]`` for a list index."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def comment_text(code: str) -> str:
    """The comment text of code, line by line (each line stripped first): a line that starts
    like a comment is kept whole, another line holding '#' gives what follows its first '#'."""
    lines = [line.strip() for line in code.splitlines()]
    return "\n".join(
        line if line.startswith(COMMENT_LINE_STARTS) else line.split("#", 1)[1]
        for line in lines
        if line.startswith(COMMENT_LINE_STARTS) or "#" in line
    )


def _strings(node: object, in_code: bool, prose: list[str], code: list[str]) -> None:
    """Append every string below ``node`` to ``prose``, or to ``code`` below a code key.

    Leaves are handled in the parent's loop: a call per container, not per value.
    """
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str):
                (code if in_code or key in CODE_KEYS else prose).append(value)
            elif isinstance(value, dict | list):
                _strings(value, in_code or key in CODE_KEYS, prose, code)
    elif isinstance(node, list):
        for value in node:
            if isinstance(value, str):
                (code if in_code else prose).append(value)
            elif isinstance(value, dict | list):
                _strings(value, in_code, prose, code)
    elif isinstance(node, str):
        (code if in_code else prose).append(node)


def _paths(node: object, path: str, in_code: bool, prose: list[str], code: list[str]) -> None:
    """Like ``_strings``, in the same order, but appending each string's JSON path."""
    if isinstance(node, str):
        (code if in_code else prose).append(path)
    elif isinstance(node, dict):
        for key, value in node.items():
            _paths(value, child_path(path, key), in_code or key in CODE_KEYS, prose, code)
    elif isinstance(node, list):
        for position, value in enumerate(node):
            _paths(value, child_path(path, position), in_code, prose, code)


class Haystack:
    """A record's scanned text: the prose strings, a newline, the comment text, one string.

    No pattern can match across a newline, so a match always lies in one segment
    (one string value). Paths are worked out only when something matched.
    """

    def __init__(self, record: dict) -> None:
        self.record = record
        prose: list[str] = []
        code: list[str] = []
        for keys in SCANNED_SUBTREES:
            _strings(dig(record, *keys), False, prose, code)
        self.segments = prose + [comment_text(text) for text in code]
        self.text = "\n".join(self.segments)
        self._paths: list[str] | None = None
        self._starts: list[int] = []

    def paths(self) -> list[str]:
        """The JSON path of each segment, in segment order."""
        if self._paths is None:
            prose: list[str] = []
            code: list[str] = []
            for keys in SCANNED_SUBTREES:
                _paths(dig(self.record, *keys), ".".join(keys), False, prose, code)
            self._paths = prose + code
            offset = 0
            for segment in self.segments:
                self._starts.append(offset)
                offset += len(segment) + 1
        return self._paths

    def where(self, offset: int) -> str:
        """The path of the string that holds the haystack character at ``offset``."""
        paths = self.paths()
        return paths[bisect.bisect_right(self._starts, offset) - 1]

    def first_path_containing(self, folded_term: str) -> str:
        paths = self.paths()
        for path, segment in zip(paths, self.segments, strict=True):
            if folded_term in segment.casefold():
                return path
        return ""


# --- the check ----------------------------------------------------------------------------


def _leaks(record_id: str, haystack: Haystack) -> Iterator[Finding]:
    for what, pattern, literal in LEAK_PATTERNS:
        if literal not in haystack.text:
            continue
        for match in pattern.finditer(haystack.text):
            where = haystack.where(match.start())
            yield Finding(record_id, NAME, f"{what} {match.group()!r} in {where}", where)


def _denylisted(record_id: str, haystack: Haystack, terms: tuple[str, ...]) -> Iterator[Finding]:
    folded = haystack.text.casefold()
    for term in terms:
        if term in folded:
            where = haystack.first_path_containing(term)
            yield Finding(record_id, NAME, f"denylisted private term {term!r} in {where}", where)


def check(ctx: GateContext) -> Iterator[Finding]:
    configured = denylist_file()
    terms: tuple[str, ...] = ()
    if configured is not None:
        variable, path = configured
        try:
            terms = read_denylist(path)
        except (OSError, UnicodeDecodeError) as exc:
            # Fail closed: a configured but unreadable denylist must not let private terms pass.
            yield Finding(path, NAME, f"denylist file named by {variable} cannot be read: {exc}")
    for record_file, record in ctx.parsed():
        if not isinstance(record, dict):
            continue
        haystack = Haystack(record)
        yield from _leaks(record_file.id, haystack)
        if terms:
            yield from _denylisted(record_file.id, haystack, terms)


# --- injection cases ----------------------------------------------------------------------


GATE = Gate(
    NAME, "store", "no absolute paths, emails, .md pages or denylisted terms", check, alone=True
)


@GATE.case("home-path-in-observed")
def _home_path_in_observed(ctx: GateContext) -> bool:
    payload = ctx.records[0].data["payload"]
    payload["observed"] = (
        payload.get("observed", "") + " Profile saved under /home/jdoe/ncu/layernorm_wide.ncu-rep."
    )
    return True


@GATE.case("email-in-lesson")
def _email_in_lesson(ctx: GateContext) -> bool:
    payload = ctx.records[0].data["payload"]
    payload["lesson"] += " Questions to jane.doe@example.com."
    return True


@GATE.case("markdown-page-in-trigger")
def _markdown_page_in_trigger(ctx: GateContext) -> bool:
    retrieval = ctx.records[0].data["retrieval"]
    retrieval["triggers"].append("see layernorm-tuning-notes.md before changing BLOCK")
    return True


@GATE.edit("path-in-snippet-comment", first_of_type("strategy"))
def _path_in_snippet_comment(strategy: dict) -> None:
    implementation = strategy["payload"]["implementation"]
    implementation["snippet"] += "+    # copied from /Users/kim/work/softmax_v4.py\n"


@GATE.case("home-path-in-locator")
def _home_path_in_locator(ctx: GateContext) -> bool:
    retrieval = ctx.records[0].data["retrieval"]
    retrieval["locator"] = {"kernel_source": "/root/kernels/layernorm/whole_row.py"}
    return True
