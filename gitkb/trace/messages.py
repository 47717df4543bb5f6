"""The commit-message grammar of a trace (docs/trace-format.md §1.3-1.4, rules 1 and 10)."""

from __future__ import annotations

import re

VERSION_PREFIX = re.compile(r"^\s*v(\d+)\s*:", re.IGNORECASE)
EPISODE = re.compile(r"^\s*episode\s+(\d+)\s*:", re.IGNORECASE)
_REVERTED_WORD = re.compile(r"\breverted\b|dead-end recorded", re.IGNORECASE)
_VERDICT_LINE = re.compile(r"^\s*verdict\s*:(.*)$", re.IGNORECASE | re.MULTILINE)
_DEADEND = re.compile(r"dead-end recorded:(.*)", re.IGNORECASE | re.DOTALL)
_NEXT = re.compile(r"\bNext:(.*)", re.DOTALL)
_SENTENCE_END = re.compile(r"\.\s+(?=[A-Za-z])")
_OUTCOME = re.compile(r"^\s*v\d+\s*:\s*long-horizon episode (\d+)", re.IGNORECASE)
_STREAK = re.compile(r"(\d+)(?:st|nd|rd|th) consecutive dead-end", re.IGNORECASE)
_CONTINUATION = re.compile(
    r"(?:so|which|because|since|as|and|but|while|whereas|then|thus|hence|therefore|causing|"
    r"forcing|leaving|making|meaning|where|when|with the result)\b"
)
LEAD_IN_CHARS = 12  # a piece this short cannot be a lever of its own


def version_of(subject: str) -> int | None:
    """N of a ``v<N>:`` subject (legacy and long-horizon outcome commits), else None."""
    match = VERSION_PREFIX.match(subject)
    return int(match.group(1)) if match else None


def episode_of(subject: str) -> int | None:
    """E of an ``episode <E>: ...`` subject (a long-horizon promotion), else None."""
    match = EPISODE.match(subject)
    return int(match.group(1)) if match else None


def outcome_episode(subject: str) -> int | None:
    """E of a long-horizon non-promotion (``v<N>: long-horizon episode <E> <status>``)."""
    match = _OUTCOME.match(subject)
    return int(match.group(1)) if match else None


def long_horizon_commit(subject: str) -> str | None:
    """``promotion`` for ``episode <E>: promote ...``, ``revalidation`` for a long-horizon
    outcome (``v<N>: long-horizon episode <E> <status>``: its memory re-states the
    incumbent), else None. A record citing either must cite the episode's journal."""
    if EPISODE.match(subject):
        return "promotion"
    if _OUTCOME.match(subject):
        return "revalidation"
    return None


def body_of(message: str) -> str:
    return message.split("\n", 1)[1].strip() if "\n" in message else ""


def _cut_sentence(text: str) -> str:
    match = _SENTENCE_END.search(text)
    return (text[: match.start()] if match else text).strip().rstrip(".").strip()


def _split_top_level(text: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return items


def parse_deadends(message: str) -> tuple[list[str], str, str]:
    """(items, blob, next direction) from ``dead-end recorded: a, b. Next: c`` (edges 10-11)."""
    next_match = _NEXT.search(message)
    next_direction = next_match.group(1).strip() if next_match else ""
    match = _DEADEND.search(message)
    if not match:
        return [], "", next_direction
    blob = match.group(1)
    blob = _NEXT.split(blob, maxsplit=1)[0]
    blob = _cut_sentence(blob)
    items = _rejoin_clauses([_cut_sentence(item) for item in _split_top_level(blob)])
    return [i for i in items if len(i) > 3], blob, next_direction


def _rejoin_clauses(pieces: list[str]) -> list[str]:
    """Commas separate levers, but also the clauses of one lever's sentence: a piece that
    continues a sentence ("so ...", "which ...", "as ...") rejoins the one before it, and
    a short lead-in ("On H100") the one after it."""
    items: list[str] = []
    carry = ""
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if carry:
            piece, carry = f"{carry}, {piece}", ""
        if items and _CONTINUATION.match(piece):
            items[-1] = f"{items[-1]}, {piece}"
        elif len(piece) < LEAD_IN_CHARS and not items:
            carry = piece
        else:
            items.append(piece)
    if carry:
        items.append(carry)
    return items


def deadend_streak(message: str) -> int | None:
    streak = _STREAK.search(message)
    return int(streak.group(1)) if streak else None


def is_reverted(subject: str, body: str) -> bool:
    """Rule 10: ``reverted`` counts in the subject or a ``Verdict:`` line, not in prose."""
    if _REVERTED_WORD.search(subject):
        return True
    return any(_REVERTED_WORD.search(v) for v in _VERDICT_LINE.findall(body))
