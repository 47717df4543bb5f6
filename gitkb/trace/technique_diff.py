"""How a lever's diff is read by the technique detector (``gitkb.trace.techniques``):
its added and removed lines, each side as one text, comments cut (a comment is no code),
save the comment that names a lone value (``128,   // NPerBlock``: CK's and CUTLASS's
positional template arguments), which reads as ``NPerBlock = 128``; and which of the
techniques a diff shows are its change."""

from __future__ import annotations

import re

from gitkb.trace.technique_words import REMOVED

# A comment is no code: ``//`` and ``#`` comments (not preprocessor lines) are cut.
_LINE_COMMENT = re.compile(
    r"//.*$|(?<![\w\"'])#(?!\s*(?:pragma|define|include|if|endif|else))\s.*$"
)
# A positional argument named by its trailing comment (CK's and CUTLASS's template
# argument lists: ``128,   // NPerBlock``): the comment is the value's name, so the line
# reads as ``NPerBlock = 128``.
_NAMED_BY_COMMENT = re.compile(r"^(\s*)([\w:.]+)\s*,?\s*(?://|#)\s*([A-Za-z_]\w*)\s*$")


def changed_lines(diff: str) -> tuple[str, str]:
    """A unified diff's added and removed lines (comments cut; a lone value's trailing
    comment names it), each side as one text."""
    added: list[str] = []
    removed: list[str] = []
    for line in (diff or "").splitlines():
        if line.startswith(("+++", "---")) or line[:1] not in "+-" or not line:
            continue
        code = line[1:]
        if "#" in code or "//" in code:
            named = _NAMED_BY_COMMENT.match(code)
            code = f"{named[1]}{named[3]} = {named[2]}" if named else _LINE_COMMENT.sub("", code)
        (added if line[0] == "+" else removed).append(code)
    return "\n".join(added), "\n".join(removed)


def has_changes(diff: str) -> bool:
    """Whether a diff changes any line (a comment too): then it, not words, is the
    evidence of what the change's code did."""
    return any(
        line[:1] in ("+", "-") and not line.startswith(("+++", "---"))
        for line in (diff or "").splitlines()
    )


def as_diff(source: str) -> str:
    """Source code as a diff that adds every line (a snippet that is not a change)."""
    return "".join(f"+{line}\n" for line in (source or "").splitlines())


def outright(found: dict[str, str], defaulted: set[str]) -> dict[str, str]:
    """What a diff shows as its change (``found``: technique name -> direction): a
    construct it took out only when it adds or changes nothing else (what replaced it is
    the change: a float4 copy become a 16-byte cp.async is async-copy), and a parameter it
    only adds (``defaulted``: read against its default, as the configs of an added
    autotune are) only beside nothing else."""
    changed = {n: d for n, d in found.items() if d != REMOVED} or found
    return {n: d for n, d in changed.items() if n not in defaulted} or changed
