"""How a trace's sentence says which way a change went, and which part of it is the lever.

The technique detector (``gitkb.trace.techniques``) matches a technique's word patterns;
this module reads around a match: a sweep's winner against where it started ("tried 4, 8
and 16; 16 won"), else a transition between two numbers ("4 -> 8", "from 4 to 8", "512
(was 256)", "2 instead of 4"), else the nearest verb or adjective of direction ("bump",
"deepen", "fewer", "halve"), else the number the pattern captured against the parameter's
default. It also cuts a sentence at its cause, purpose or effect ("... because", "... so
that", "... to free shared memory", "..., which frees", "...; frees"), the lever being
what comes before, and spells small number words as digits.

It also says which parts of a sentence are context rather than the change: a clause that
names what was already there or stays ("with TMA already in place", "keeping the
persistent grid", "MFMA path unchanged", "on top of the cp.async double buffer", "now
that the GMMA path is in", "same split-K kernel"), a clause that reports what happened
before ("ldmatrix was hitting bank conflicts", "TMA didn't pay off"), and what the change
replaced ("instead of X", "replaced X with"). A technique named only there is not the
change. A sentence that says it changes no code, or that opens with a measurement
("profiled ...", "re-ran ..."), names no change at all.
"""

from __future__ import annotations

import re
from functools import lru_cache

UP, DOWN, REMOVED = "up", "down", "removed"
# A sweep that ended where it started: no direction, and no change.
UNCHANGED = "unchanged"
Span = tuple[int, int]

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
# A construct taken out: by a verb before it in its own clause ("drop the", "revert the",
# "undo the", "no longer use"; "revert to X" puts X back; "drop the masks, add
# tl.multiple_of" takes out no hint: ``_AFTER_CLAUSE``), by "non-" ("the non-persistent
# version"), by a verb of taking before it and "out" after it ("took __ldg back out"), by
# a verb after it, a word or two on ("the persistent grid reverted to ...", "the DSMEM
# exchange removed"; not "X dropped the latency"), or by "without" where the sentence
# says it is so now ("without block pointers now").
_REMOVE = re.compile(
    r"\b(?:remov\w*|drop\w*|revert\w*|undo\w*|undid|back(?:ed|ing)? out|ripp?\w* out"
    r"|disabl\w*|delet\w*|ditch\w*|(?:got|get|getting) rid of|stop(?:ped|s)? using"
    r"|no longer (?:use[sd]?|using|with))\b(?!\s+(?:to|back)\b)",
    re.I,
)
_AFTER_CLAUSE = re.compile(
    r"[;,:(]|\b(?:and|then|but|plus|add(?:s|ed|ing)?)\b"
    r"|(?<!longer )(?<!stop )(?<!stopped )(?<!stops )\b(?:use[sd]?|using)\b",
    re.I,
)
_NON = re.compile(r"\bnon[- ]?$", re.I)
_TAKE = re.compile(r"\b(?:took|take[ns]?|taking|pull(?:s|ed|ing)?|ripp?(?:s|ed|ing)?)\b", re.I)
_OUT = re.compile(r"[^;,:.]{0,20}?\b(?:back\s+)?out\b", re.I)
_GONE = re.compile(
    r"(?:\s+[a-z][\w-]*){0,2}?\s+(?:(?:is|was|were|got|gets|has been|have been|now)\s+)?"
    r"(?:removed|dropped|reverted"
    r"|backed out|taken out|ripped out|pulled out|gone|disabled|deleted)\b"
    r"(?!\s+(?:the|a|an|its|their|by|from|\d+)\b)",
    re.I,
)
_WITHOUT = re.compile(r"\bwithout\s+(?:the\s+|any\s+|a\s+)?$", re.I)
_NOW = re.compile(r"\b(?:now|anymore|any more|no longer)\b", re.I)
# What a change went back to, when it is the old form: "back to raw pointer arithmetic"
# at a clause's start or after a verb of going, "reverted to one program per tile",
# "k_batch back to 1"; not "writes the tile back to global", nor a negated one ("doesn't
# go back to HBM").
_BACK_TO = re.compile(
    r"(?:^|[;:,(\u2014]|\b(?:go|goes|going|went|fall|falls|fell|falling|switch\w*|mov(?:e|es|ed|ing)"
    r"|chang\w*|set|put|flip\w*|turn\w*|now))\s*back\s+to\b"
    r"|\bback\s+to\s+(?=\d)"
    r"|\brevert(?:s|ed|ing)?(?:\s+back)?\s+to\b",
    re.I,
)
_NEGATED = re.compile(r"(?:n't|\bnot|\bnever)\b[^;,:]{0,12}$", re.I)
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
# Where a trace's sentence turns from the lever to its cause, its purpose or its effect
# (a relative clause after a comma; a clause after a semicolon that opens with the verb
# of what the change did: "...; frees the producer warps' registers").
_CAUSE = re.compile(
    r"\b(?:because|since|due to|which (?:is|was|were|made|makes)|so that|so|in order to"
    r"|to (?:free|fit|avoid|keep|cut|hide|reduce|save|cap|kill|match|improve|increase"
    r"|lower|raise|hit|fill|saturate|overlap|amortize|spread))\b"
    r"|,\s*which\b"
    r"|;\s*(?:frees|saves|cuts|hides|avoids|halves|lets|gives|makes|keeps|removes)\b",
    re.I,
)
# Where one clause of a sentence ends and the next begins: a semicolon, a colon (not
# C++'s ``::``), a comma, a dash between words, a "but".
_CLAUSE = re.compile(r";|(?<!:):(?!:)|,|\s[-\u2014\u2013]\s|\bbut\b", re.I)
# Where a parameter's direction is read no further: a semicolon, a comma, a dash.
_PHRASE = re.compile(r";|,(?!\s*\d)|\s[-\u2014\u2013]\s")
# What was there before the change and stays is context, not the change: what precedes a
# word that says it stays ("the mbarrier pipeline stays", "MFMA path unchanged", "the LDS
# staging from v4 in place"; "kept in registers", "stays resident" say where data lives,
# a change), what follows a word that says the change builds on it ("on top of the
# cp.async double buffer", "now that the GMMA path is in", "keeping the persistent grid",
# "same split-K kernel", "kept num_warps=8 but ..."), and a whole clause that says
# "already".
_STAYS = re.compile(
    r"\b(?:in place\b(?! of)|unchanged|untouched|as (?:is|before)"
    r"|(?:stays?|stayed|remains?|remained|kept)\b(?!\s+(?:in|on|at|resident|as)\b))",
    re.I,
)
_ATOP = re.compile(
    r"\b(?:on top of|now that|keeping)\b|^\s*(?:the )?same\b"
    r"|^\s*(?:kept|left)\b"
    r"(?![^;,:]*\b(?:in (?:registers|l[12]|smem|shared memory|lds)|resident)\b)",
    re.I,
)
_ALREADY = re.compile(r"\balready\b", re.I)
# A clause that reports what happened before the change ("ldmatrix was hitting bank
# conflicts", "TMA didn't pay off at K=512"): the reason, not the change.
_REPORTED = re.compile(
    r"\b(?:was|were) \w+ing\b|\b(?:did not|didn't|wasn't|weren't|could not|couldn't)\b",
    re.I,
)
# What a change replaced: "instead of X", "rather than X", "in place of X" (to the end of
# its clause), "replaced X with".
_REPLACED = re.compile(
    r"\b(?:instead of|rather than|in place of)\b[^;,:]*|\breplac\w*\b[^;,:]*?(?=\bwith\b)",
    re.I,
)
# A sentence that says it changed no code, or opens with a measurement of the code as it
# is: no lever at all.
_NO_CHANGE = re.compile(
    r"\bno (?:code|codegen|kernel|source|functional) changes?\b"
    r"|^\W*(?:re-?ran|re-?measured|re-?profiled|re-?benchmarked|profiled)\b",
    re.I,
)
# A sweep's winner ("16 won", "2 was fastest", "32 best", "kept 128", "settled on 4096")
# and where it started ("starting from 3", "from 64", "was 4").
_WINNER = (
    re.compile(
        r"\b(\d+)\s+(?:still |again |stays? |stayed |remains? |remained )?(?:won|wins"
        r"|(?:was |is )?(?:the )?(?:fastest|best)|came out ahead)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:kept|settled on|picked|chose|went with|best at|winner(?: was| is|:)?)\s+(\d+)\b"
        r"(?!\s*[\w%])",
        re.I,
    ),
)
_START = re.compile(
    r"\b(?:start(?:ing|ed) (?:from|at)|from|was|baseline(?: of| was)?|default(?: of| was)?)"
    r"\s+(\d+)\b",
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


def swept(text: str, default: int | None) -> str | None:
    """The direction of a sweep's winner against where the sweep started (its default when
    the text does not say), ``UNCHANGED`` when it won where the sweep started ("4 still
    best"), "" when neither is known, None when the text names no winner."""
    won = next((m for m in (w.search(text) for w in _WINNER) if m), None)
    if won is None:
        return None
    started = next((m for m in _START.finditer(text) if m.start(1) != won.start(1)), None)
    old = [int(started.group(1))] if started else [default] if default is not None else []
    if old == [int(won.group(1))]:
        return UNCHANGED
    return moved([int(won.group(1))], old, default)


# Every word one of the ways of taking a construct out needs: a sentence with none of them
# takes nothing out (``taken_out``'s cheap path).
_OUT_WORDS = re.compile(
    r"remov|drop|revert|undo|undid|out\b|disabl|delet|ditch|rid of|using|longer|non\b|gone"
    r"|without",
    re.I,
)


@lru_cache(maxsize=256)
def may_take_out(sentence: str) -> bool:
    """Whether a sentence holds a word ``taken_out`` needs to find a construct taken out
    (asked once for each technique the sentence names, so remembered)."""
    return bool(_OUT_WORDS.search(sentence))


def taken_out(sentence: str, match: re.Match[str]) -> bool:
    """Whether the words around a match take it out ("drop the", "revert the", "took ...
    back out", "the non-persistent version", "... reverted to"): a construct removed, a
    named setting back to a value the sentence does not name."""
    before = sentence[max(0, match.start() - 25) : match.start()]
    own = before[max((m.end() for m in _AFTER_CLAUSE.finditer(before)), default=0) :]
    after = sentence[match.end() :]
    return bool(
        _REMOVE.search(own)
        or _NON.search(before)
        or (_TAKE.search(own) and _OUT.match(after))
        or _GONE.match(after)
        or (_WITHOUT.search(before) and _NOW.search(sentence))
    )


def returned_to(text: str) -> Span | None:
    """Where ``text`` names what a change went back to (to the end of that clause), or
    None: "back to raw pointer arithmetic" is the old form, and a construct named
    elsewhere in the text is what was taken out."""
    for found in _BACK_TO.finditer(text):
        if _NEGATED.search(text, 0, found.start()):
            continue
        end = next((c.start() for c in _CLAUSE.finditer(text, found.end())), len(text))
        return found.end(), end
    return None


def direction_of(kind: str, sentence: str, match: re.Match[str], default: int | None) -> str:
    """Which way the sentence says a technique of ``kind`` went, around ``match``."""
    start = max(0, match.start() - WINDOW)
    if kind == "construct":
        return REMOVED if taken_out(sentence, match) else ""
    if kind != "parameter":
        return ""
    sweep = swept(sentence, default)
    if sweep is not None:
        return sweep
    # read within the match's clause: "8 rows per program; the grid drops from 32768 to
    # 4096" is no fewer rows
    lo = max((m.end() for m in _PHRASE.finditer(sentence, 0, match.start())), default=0)
    hi = next((m.start() for m in _PHRASE.finditer(sentence, match.end())), len(sentence))
    start = max(lo, start)
    window = sentence[start : min(hi, match.end() + WINDOW)]
    captured = match.group(1) if match.re.groups and match.group(1) else ""
    # a transition that starts near the match may end past the window
    found = transition(sentence[start : min(hi, match.end() + 2 * WINDOW)], len(window))
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


def changes_nothing(sentence: str) -> bool:
    """Whether a sentence says it changed no code, or opens with a measurement."""
    return bool(_NO_CHANGE.search(sentence or ""))


_CONTEXT_WORDS = (_ALREADY, _REPORTED, _STAYS, _ATOP, _REPLACED)


def context_spans(text: str) -> tuple[Span, ...]:
    """The parts of ``text`` that are context, not the change: in each clause, what precedes
    a word that says it stays, what follows a word that says the change builds on it, the
    whole clause where it says "already" or reports what happened before; and what the
    change replaced."""
    spans: list[Span] = []
    if not any(p.search(text) for p in _CONTEXT_WORDS):
        return ()
    start = 0
    for end, after in [m.span() for m in _CLAUSE.finditer(text)] + [(len(text), len(text))]:
        clause = text[start:end]
        if _ALREADY.search(clause) or _REPORTED.search(clause):
            spans.append((start, end))
        spans.extend((start, start + m.end()) for m in _STAYS.finditer(clause))
        spans.extend((start + m.start(), end) for m in _ATOP.finditer(clause))
        start = after
    spans.extend(m.span() for m in _REPLACED.finditer(text))
    return tuple(spans)


# A possessive after a word: "TileShape's", "warps' registers" (not a quoted key: 'BLOCK_N':).
_POSSESSIVE = re.compile(r"['\u2019]s\b|(?<=[a-z]{2}s)['\u2019](?=\s+[a-z])", re.I)
# A register budget after a word: "producer task registers 40 -> 24" is a budget of the
# task that is there, as "the producer task's registers" is.
_BUDGET = re.compile(r"\s+(?:registers?|regs|register (?:budget|count|cap)|budget)\b", re.I)


def in_context(spans: tuple[Span, ...], text: str, match: re.Match[str]) -> bool:
    """Whether a match is context: it starts inside one of ``spans``, or it is a possessor
    ("the TileShape's K", "the producer warps' registers": a property of what is there), or
    a budget's owner ("producer task registers 40 -> 24")."""
    if _POSSESSIVE.match(text, match.end()) or _BUDGET.match(text, match.end()):
        return True
    return any(a <= match.start() < b for a, b in spans)


def within_another(chosen: dict[str, Span], every: dict[str, tuple[Span, ...]]) -> set[str]:
    """The names whose match (``chosen``) lies inside one of another name's matches
    (``every``): a word pattern may take in what its technique's part does ("a TMA producer
    task" names warp specialization, and the TMA inside it is the producer's role, not a
    change of its own; so is the tcgen05 in "an MMA partition that issues tcgen05", the
    same technique's second match)."""
    return {
        n
        for n, (a, b) in chosen.items()
        for m, spans in every.items()
        if m != n and any((c, d) != (a, b) and c <= a and b <= d for c, d in spans)
    }
