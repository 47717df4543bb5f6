"""How a trace's sentence says which way a change went, and which part of it is the lever.

The technique detector (``gitkb.trace.techniques``) matches a technique's word patterns;
this module reads around a match: a transition between two numbers ("4 -> 8", "from 4 to
8", "512 (was 256)", "2 instead of 4"), else the nearest verb or adjective of direction
("bump", "deepen", "fewer", "halve"), else the number the pattern captured against the
parameter's default. It also cuts a sentence at its cause or purpose ("... because",
"... so that", "... to free shared memory"), the lever being what comes before, and
spells small number words as digits.
"""

from __future__ import annotations

import re

UP, DOWN, REMOVED = "up", "down", "removed"

_UP = re.compile(
    r"\b(?:more|increas\w*|rais\w*|higher|larger|bigger|doubl\w*|bump\w*|wider|widen\w*"
    r"|grow\w*|deepen\w*|deeper|quadrupl\w*)\b",
    re.I,
)
_DOWN = re.compile(
    r"\b(?:fewer|less|reduc\w*|lower\w*|decreas\w*|smaller|halv\w*|narrower|shrink\w*"
    r"|drop\w*|shallower|trim\w*)\b",
    re.I,
)
_REMOVE = re.compile(r"\b(?:remov\w*|drop\w*|revert\w*)\b", re.I)
# Up to two words between a comparison and the old number ("instead of a fixed 1024").
_FILLER = r"(?:[a-z][\w-]*\s+){0,2}?"
# Two numbers and which of them is the new one: (pattern, the new value's group).
_TRANSITIONS = (
    # 4 -> 8, 4 to 8, from 4 to 8, 8 down to 4, 8 back to 4
    (re.compile(r"\b(\d+)\s*(?:->|→|=>|(?:(?:down|up|back|all the way)\s+)?to)\s*(\d+)\b"), 2),
    # 512 (was 256), 8, previously 4, 16 up from 8, 8192 (was a fixed 1024)
    (
        re.compile(
            r"\b(\d+)\b[^\d.;()]{0,30}?\(?\s*\b(?:was|previously|formerly|(?:up |down )?from)"
            r"\s+" + _FILLER + r"(\d+)\b",
            re.I,
        ),
        1,
    ),
    # 2 instead of 4, 256 rather than 128, 8192 instead of a fixed 1024
    (
        re.compile(
            r"\b(\d+)\b[^\d.;]{0,30}?\b(?:instead of|rather than|in place of|vs\.?|versus)"
            r"\s+" + _FILLER + r"(\d+)\b",
            re.I,
        ),
        1,
    ),
)
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "sixteen": "16", "thirty-two": "32",
}  # fmt: skip
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)
# Words a pattern may capture in place of a number, and the direction they give.
_AMOUNT_WORDS = {"multiple": UP, "several": UP, "more": UP, "fewer": DOWN}
WINDOW = 40  # characters around a word match read for its direction
# Where a trace's sentence turns from the lever to its cause or its purpose.
_CAUSE = re.compile(
    r"\b(?:because|since|due to|which (?:is|was|were|made|makes)|so that|so|in order to"
    r"|to (?:free|fit|avoid|keep|cut|hide|reduce|save|cap|kill|match|improve|increase"
    r"|lower|raise|hit|fill|saturate|overlap|amortize|spread))\b",
    re.I,
)


def _nearest(window: str, at: int) -> str:
    """The direction of the verb or adjective nearest ``at`` in ``window``, or ""."""
    best, where = "", len(window) + 1
    for direction, words in ((UP, _UP), (DOWN, _DOWN)):
        for found in words.finditer(window):
            distance = min(abs(found.start() - at), abs(found.end() - at))
            if distance < where:
                best, where = direction, distance
    return best


def moved(added: list[int], removed: list[int], default: int | None) -> str:
    """Which way a parameter moved: its new values against the ones they replaced, else
    against its default."""
    if not added:
        if default is None or not removed:
            return REMOVED
        added, removed = [default], removed
    if not removed:
        if default is None:
            return ""
        removed = [default]
    new, old = (max(added), min(added)), (max(removed), min(removed))
    return UP if new > old else DOWN if new < old else ""


def transition(text: str, within: int | None = None) -> str:
    """The direction of the first transition between two numbers in ``text`` that starts
    in its first ``within`` characters (anywhere, when None), or ""."""
    for pattern, new in _TRANSITIONS:
        found = pattern.search(text)
        if found and (within is None or found.start() < within):
            return moved([int(found.group(new))], [int(found.group(3 - new))], None)
    return ""


def direction_of(kind: str, sentence: str, match: re.Match[str], default: int | None) -> str:
    """Which way the sentence says a technique of ``kind`` went, around ``match``."""
    start = max(0, match.start() - WINDOW)
    before = sentence[start : match.start()]
    if kind == "construct":
        return REMOVED if _REMOVE.search(before[-25:]) else ""
    if kind != "parameter":
        return ""
    window = sentence[start : match.end() + WINDOW]
    captured = match.group(1) if match.re.groups and match.group(1) else ""
    # a transition that starts near the match may end past the window
    found = transition(sentence[start : match.end() + 2 * WINDOW], len(window))
    found = found or _nearest(window, match.start() - start)
    if found:
        return found
    if captured.lower() in _AMOUNT_WORDS:
        return _AMOUNT_WORDS[captured.lower()]
    if captured.isdigit() and default is not None:
        return moved([int(captured)], [], default)
    return ""


def lever_parts(sentence: str) -> tuple[str, str]:
    """The lever a sentence names, its cause or purpose cut off ("fewer warps were slower
    because each warp holds the row in registers": the lever is the fewer warps), and the
    whole sentence, each with its small number words as digits ("two rows" -> "2 rows")."""
    whole = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(1).lower()], sentence or "")
    return _CAUSE.split(whole, maxsplit=1)[0], whole
