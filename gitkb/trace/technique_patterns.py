"""A technique pattern compiled to run cheaply: Python's ``re`` scans every position of a
pattern that starts with ``\\b``, and runs every pattern over every text. A ``Signature``
checks a leading word boundary by hand and first looks for the literal texts one of which
every match starts with, or holds (its ``anchors``, read from the pattern itself), so a
vocabulary of a few hundred patterns costs a few substring tests a text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from gitkb.errors import GitkbError
from gitkb.trace.vocabulary_version import FILE_NAME


@dataclass(slots=True, frozen=True)
class Signature:
    """One pattern, with what makes it cheap to run: a leading word boundary is checked by
    hand (Python's ``re`` scans every position of a pattern that starts with one) and the
    literals one of which every match starts with (``anchors``) are looked for first. It
    is compiled when first run: a process runs the few whose anchors its texts hold."""

    source: str  # the pattern without its leading ``\\b``
    flags: int
    bounded: bool
    anchors: tuple[str, ...] | None

    @property
    def pattern(self) -> re.Pattern[str]:
        try:
            return _compiled(self.source, self.flags)
        except re.error as exc:
            raise GitkbError(f"{FILE_NAME}: bad pattern {self.source!r}: {exc}") from None

    def may_match(self, lowered: str) -> bool:
        """Whether the pattern may match a text (``lowered``: in lower case)."""
        return self.anchors is None or any(a in lowered for a in self.anchors)

    def matches(self, text: str, lowered: str) -> Iterator[re.Match[str]]:
        """The matches of the pattern in ``text`` (``lowered``: it in lower case)."""
        if not self.may_match(lowered):
            return
        for match in self.pattern.finditer(text):
            start = match.start()
            if self.bounded and start and (text[start - 1].isalnum() or text[start - 1] == "_"):
                continue
            yield match


_LITERAL_ESCAPES = frozenset(".()[]{}+*?|^$\\/<>:#-=@")
_LITERAL_CHARS = frozenset("_:<#@=-/ ")


def _top_level(pattern: str) -> tuple[list[str], int]:
    """A pattern's alternatives split at each ``|`` outside every group and class, and
    where its first group closes (-1 when it does not start with one)."""
    parts, depth, in_class, i, last, first_close = [], 0, False, 0, 0, -1
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and first_close < 0 and pattern.startswith("("):
                first_close = i
        elif c == "|" and depth == 0:
            parts.append(pattern[last:i])
            last = i + 1
        i += 1
    return [*parts, pattern[last:]], first_close


def _literal_at(pattern: str, i: int) -> tuple[str, int] | None:
    """The literal character that ``pattern`` holds at ``i`` and how many pattern characters
    it takes (an escaped one, two); None where ``i`` starts no literal."""
    c = pattern[i]
    if c == "\\" and pattern[i + 1 : i + 2] and pattern[i + 1] in _LITERAL_ESCAPES:
        return pattern[i + 1], 2
    if c.isalnum() or c in _LITERAL_CHARS:
        return c, 1
    return None


def _literal_prefix(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        found = _literal_at(pattern, i)
        if found is None:
            break
        literal, step = found
        after = pattern[i + step : i + step + 1]
        if after and after in "?*{":
            break
        out.append(literal)
        if after == "+":
            break
        i += step
    return "".join(out).lower()


def anchors(pattern: str) -> tuple[str, ...] | None:
    """Literal texts (lower case), one of which every match of ``pattern`` starts with:
    the leading literal characters of each alternative, up to the first that is optional
    or not literal, each of three characters or more. None: no such texts (the pattern
    then always runs)."""
    alternatives, close = _top_level(pattern)
    if len(alternatives) > 1:
        found = [anchors(a) for a in alternatives]
        if any(f is None for f in found):
            return None
        return tuple(a for f in found if f for a in f)
    body = pattern[2:] if pattern.startswith("\\b") else pattern
    if body.startswith("(?:"):
        _, close = _top_level(body)
        if close >= 0 and body[close + 1 : close + 2] not in ("?", "*", "{"):
            inner = anchors(body[3:close])
            if inner is not None:
                return inner
    prefix = "" if body.startswith("(") else _literal_prefix(body)
    if len(prefix) >= 3:
        return (prefix,)
    required = _required_literal(body)
    return (required,) if len(required) >= 3 else None


def _skip(pattern: str, i: int, close: str) -> int:
    """The index after the group or class that opens at ``i`` (``close``: its end)."""
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if close == "]":
            if c == "]" and i > 0:
                return i + 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _required_literal(pattern: str) -> str:
    """The longest run of literal characters that every match of a one-alternative
    pattern holds (lower case), read from its top-level sequence."""
    best, run, i = "", "", 0
    while i < len(pattern):
        found = _literal_at(pattern, i)
        if found is None:
            c = pattern[i]
            if c == "(":
                i = _skip(pattern, i, ")")
            elif c == "[":
                i = _skip(pattern, i + 1, "]")
            else:
                i += 2 if c == "\\" else 1
            best, run = max(best, run, key=len), ""
            continue
        literal, step = found
        after = pattern[i + step : i + step + 1]
        if after and after in "?*{":
            best, run = max(best, run, key=len), ""
        else:
            run += literal
            if after == "+":
                best, run = max(best, run, key=len), ""
        i += step
    return max(best, run, key=len).lower()


def compiled(pattern: object, where: str, flags: int = 0, check: bool = True) -> Signature:
    """The signature of ``pattern``; ``check``: compiled now, so a bad one is an error here
    (the shipped vocabulary, compiled whole by the tests, is compiled as it is run)."""
    if not isinstance(pattern, str) or not pattern:
        raise GitkbError(f"{FILE_NAME}: {where}: a pattern must be a non-empty string")
    bounded = pattern.startswith("\\b")
    body = pattern[2:] if bounded else pattern
    if check:
        try:
            _compiled(body, flags)
        except re.error as exc:
            raise GitkbError(f"{FILE_NAME}: {where}: bad pattern {pattern!r}: {exc}") from exc
    return Signature(body, flags, bounded, anchors(body))


@cache
def _compiled(source: str, flags: int) -> re.Pattern[str]:
    return re.compile(source, flags)
