"""The content signature: which code a record carries, independent of paths and whitespace.

Two admissions with the same signature on the same page hold the same code, so
the second is a reproduction of the first, not a new finding. Stdlib only: the
index builder imports this on every admission.
"""

from __future__ import annotations

from functools import lru_cache
from hashlib import sha256

from gitkb.record.values import mapping

PREFIX = "csha:"
_DIFF_HEADERS = ("+++", "---")


# An admission signs a record's code twice (finding a reproduction, then indexing it).
@lru_cache(maxsize=256)
def code_signature(text: str, diff: bool) -> str | None:
    """``csha:`` + 32 hex over the code lines, whitespace folded away (``a=1`` is ``a = 1``).

    For a diff only the changed lines count, sign kept (a revert is other
    code); file headers, hunk headers and context are ignored, so paths and
    line numbers never change the signature. Blank lines do not count.
    """
    lines = []
    for line in text.splitlines():
        if diff:
            if line[:1] not in ("+", "-") or line.startswith(_DIFF_HEADERS):
                continue
            folded = "".join(line[1:].split())
            if folded:
                lines.append(line[0] + folded)
        else:
            folded = "".join(line.split())
            if folded:
                lines.append(folded)
    if not lines:
        return None
    digest = sha256("\n".join(lines).encode("utf-8")).hexdigest()
    return PREFIX + digest[:32]


def content_signature(record: dict) -> str | None:
    """The signature of a record's ``payload.implementation`` code; None when it has none."""
    payload = mapping(record.get("payload"))
    impl = mapping(payload.get("implementation"))
    fmt, snippet = impl.get("format"), impl.get("snippet")
    if not isinstance(fmt, str) or not isinstance(snippet, str) or fmt == "none":
        return None
    return code_signature(snippet, diff=fmt.startswith("unified-diff"))
