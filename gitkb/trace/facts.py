"""Whether a dead-end's own words state a law: a checkable condition and a mechanism.

An anti-strategy is kept only as "under condition C, doing X gives bad result Y because
of M" (docs/record-format.md §5). Traces state that in every sentence shape: the condition
before or after the change, the mechanism as a causal clause ("because ...", "so ...")
or as a plain statement of what the change does ("the tail wave dominates", "the
grid-stride loop adds index math to every row"). This module finds the condition's parts
and decides whether a mechanism is stated; partition's pre-check and the built-in
distiller both use it, so the flag a packet carries and the distiller's decision agree.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from gitkb import targets

MIN_TEXT_CHARS = 12

_SM = re.compile(r"\bsm_?\d{2,3}[a-z]?\b|\bgfx\d{3,4}[a-z]?\b", re.IGNORECASE)
_SM_COUNT = re.compile(r"\b\d{2,3}\s+SMs?\b|\b\d{2,3}\s+CUs\b")
_DTYPE = re.compile(
    r"\b(?:bf16|fp16|fp8|fp6|fp4|fp32|fp64|tf32|int8|int4|e4m3|e5m2|mxfp[468]|nvfp4|"
    r"float16|bfloat16|float32|half precision)\b",
    re.IGNORECASE,
)
_TOOLCHAIN = re.compile(
    r"\b(?:triton|cuda|cutlass|ptx|driver|rocm|hip|nvcc|torch|pytorch)\s*v?\d+(?:\.\d+)*\b",
    re.IGNORECASE,
)
_DIMENSION = (
    r"(?:batch(?:es|[ _-]?sizes?)?|rows?|columns?|cols?|hidden(?:[ _-]?(?:sizes?|dims?))?|"
    r"head[ _-]?dims?|heads|seq(?:uence)?(?:[ _-]?len(?:gth)?s?)?|sequences?|tokens?|experts?|"
    r"elements?|n_rows|n_cols|[MNK]|BLOCK(?:_[A-Z]+)?|num_warps|warps|tiles?|shapes?)"
)
_COMPARISON = (
    r"(?:<=|>=|<|>|==|=|≤|≥|below|above|under|over|beyond|past|exceeding|up to|at most|at least|"
    r"(?:less|fewer|more|greater|smaller|larger|shorter|longer|wider|narrower|bigger) than|"
    r"of (?:at least |at most |up to )?)"
)
_NUMBER = r"\d+(?:[,_]\d{3})*(?:\.\d+)?\s*(?:[KM]i?B|K|M)?"
_SHAPE = re.compile(
    # "batch sizes below 64 rows", "rows shorter than 1024", "M >= 4096", "rows of 8192 columns"
    rf"\b{_DIMENSION}\s*(?:(?:is|are|of size)\s+)?{_COMPARISON}\s*{_NUMBER}(?:\s*{_DIMENSION})?\b"
    # "below 64 rows", "fewer than 132 rows", "under 1024 columns"
    rf"|\b{_COMPARISON}\s*{_NUMBER}\s*{_DIMENSION}\b"
    # "64 rows or fewer", "4096 columns and above"
    rf"|\b{_NUMBER}\s*{_DIMENSION}\s+(?:or|and)\s+(?:fewer|less|more|larger|smaller|below|above)"
    # "cols % 8 != 0"
    rf"|\b{_DIMENSION}\s*%\s*\d+\s*(?:!=|==)\s*\d+"
    # "BLOCK 8192", "BLOCK_M=256": a tile size is a shape the fact holds at
    r"|\bBLOCK(?:_[A-Z]+)?\s*[=:]?\s*\d+\b"
    # "small M", "odd column counts", "tiny batches", "long sequences"
    rf"|\b(?:small|large|tiny|short|long|wide|narrow|odd|even|skinny|non-power-of-two)"
    rf"[- ](?:{_DIMENSION}|column counts?|row counts?)\b"
    r"|\b\d+\s*(?:KB|MB|KiB|MiB)\b(?:\s+of\s+\w+(?:\s+memory)?)?",
    re.IGNORECASE,
)
_CONDITION_WORDS = re.compile(
    r"\bwhen [a-z]|\bonly (?:if|when|on)\b|\bfor (?:all )?shapes? (?:with|where|below|above)\b",
    re.IGNORECASE,
)
# A mechanism: a causal clause, or a statement of what the change does to the machine.
_MECHANISM = re.compile(
    r"\bbecause\b|\bsince\b|\bdue to\b|\bcaused by\b|\bthe reason\b|\bas a result\b|\bso that\b|"
    r"\bso (?:the|each|every|it|they|that|all|no|only)\b|\bwhich (?:means|makes|forces|leaves|"
    r"adds|costs|breaks|limits|serializes|stalls)\b|\bthus\b|\bhence\b|\btherefore\b|"
    r"\bleads? to\b|\bresults? in\b|\bforcing\b|\bcausing\b|\bmeaning\b|"
    r"\b(?:bound|limited|gated|capped|throttled) by\b|serializ|contention|saturat|spill|"
    r"occupancy|bank conflict|scoreboard|\bbarrier|(?:bandwidth|latency|compute|memory)[- ]bound|"
    r"wave quantization|tail (?:effect|wave)|partial wave|launch overhead|overhead|"
    r"register pressure|does not fit|doesn't fit|exceeds|cannot|can't|unsupported|"
    r"not supported|requires|dominat|\bwastes?\b|\bstalls?\b|\bevict|"
    r"\badds? (?:\w+ ){0,3}?(?:math|overhead|latency|instructions?|work|traffic|registers?|"
    r"barriers?|passes|a (?:pass|round trip|launch|barrier|sync))\b|"
    r"\bcosts? (?:more|an extra|a second|another|extra)\b|"
    r"thrash|diverg|uncoalesc|misalign|overflow|underflow|starv|\bidle\b|redundant|recomput|"
    r"round[- ]trips?|synchroniz|\bbreaks?\b|doubles|halves|\bblocks? the\b|\bhides? no\b|"
    r"no longer overlaps?|never overlaps?|cannot overlap|out of (?:registers|shared memory)",
    re.IGNORECASE,
)
_MEASUREMENT_ONLY = re.compile(
    r"no improvement|flat[- ]within[- ]noise|within noise|hw floor (?:re)?confirmed|"
    r"slower|faster|regress",
    re.IGNORECASE,
)


@cache
def _hardware_names() -> re.Pattern:
    """Product and architecture names of the target table, as whole words."""
    names = {t for t in targets.table() if len(t) >= 3 and t not in ("cpu",)}
    names |= {a for a in targets.arches() if a != "generic"}
    names |= {"ampere", "hopper", "blackwell", "ada", "volta"}
    body = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"\b(?:{body})\b", re.IGNORECASE)


def conditions(text: str, dsl: str | None = None) -> dict[str, str]:
    """The checkable condition a text states: ``sm_arch`` (an sm_/gfx number, else a product
    or architecture name, with an SM count when stated), ``shape_regime``, ``dtype``,
    ``toolchain`` (a versioned toolchain in the text, else the DSL when given)."""
    found = dict(_stated_conditions(text))
    if "toolchain" not in found and dsl and dsl != "any":
        found["toolchain"] = dsl
    return found


@lru_cache(maxsize=8192)
def _stated_conditions(text: str) -> tuple[tuple[str, str], ...]:
    """What ``conditions`` finds in the text itself. Kept per text: partition and the
    distiller ask about the same sentences, and these searches are most of their cost."""
    found: dict[str, str] = {}
    arch = _SM.search(text) or _hardware_names().search(text)
    count = _SM_COUNT.search(text)
    if arch and count:
        found["sm_arch"] = f"{arch.group(0)} ({count.group(0)})"
    elif arch or count:
        found["sm_arch"] = (arch or count).group(0)
    if shape := _SHAPE.search(text):
        found["shape_regime"] = shape.group(0).strip()
    if dtype := _DTYPE.search(text):
        found["dtype"] = dtype.group(0)
    if tool := _TOOLCHAIN.search(text):
        found["toolchain"] = tool.group(0)
    return tuple(found.items())


def checkable(text: str) -> bool:
    """Whether the text names a condition of its own (a DSL alone does not count)."""
    return bool(conditions(text)) or bool(_CONDITION_WORDS.search(text))


@lru_cache(maxsize=8192)
def states_mechanism(text: str) -> bool:
    return bool(_MECHANISM.search(text))


def fact_precheck(text: str) -> str:
    """``ok``, or why the text cannot carry an established fact (a flag, never a drop)."""
    if len(text.strip()) < MIN_TEXT_CHARS:
        return "too short to carry a claim"
    mechanism = states_mechanism(text)
    if mechanism and checkable(text):
        return "ok"
    if not mechanism and _MEASUREMENT_ONLY.search(text):
        return "reports a measurement, names no cause"
    if not mechanism:
        return "names no cause"
    return "no checkable condition"
