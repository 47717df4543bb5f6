"""Commit messages that end in one pure trailer block, so C git and dulwich read the
same ``Key: value`` pairs: keys ``[A-Za-z0-9-]`` only, one pair a line, nothing else
in that last paragraph."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gitkb.errors import GitkbError

TRAILER_KEY = re.compile(r"[A-Za-z0-9-]+")
_TRAILER_LINE = re.compile(r"^([A-Za-z0-9-]+): (.*)$")


def parse_trailers(message: str) -> list[tuple[str, str]]:
    """Return the message's trailer block: its last paragraph, when every line is ``Key: value``.

    The first paragraph (the subject) never counts, as in C git.
    """
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", message.strip("\n")) if p.strip()]
    if len(paragraphs) < 2:
        return []
    pairs = []
    for line in paragraphs[-1].splitlines():
        match = _TRAILER_LINE.match(line.rstrip())
        if not match:
            return []
        pairs.append((match.group(1), match.group(2)))
    return pairs


def format_message(subject: str, body: str = "", trailers: Iterable[tuple[str, str]] = ()) -> str:
    """Build a commit message ending in one pure trailer block."""
    if "\n" in subject or not subject.strip():
        raise GitkbError(f"commit subject must be one non-empty line, got {subject!r}")
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    lines = []
    for key, value in trailers:
        value = str(value)
        if not TRAILER_KEY.fullmatch(key):
            raise GitkbError(f"trailer key {key!r} must use only A-Z, a-z, 0-9 and '-'")
        if "\n" in value or not value.strip() or value != value.strip():
            raise GitkbError(f"trailer {key} needs a one-line value, got {value!r}")
        lines.append(f"{key}: {value}")
    if lines:
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
