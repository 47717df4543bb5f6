"""What curation ranks a code record by, read from the record alone.

``warmstart/curate`` ranks a kernel's same-page code records by these facts (speedup,
bench key, direction, reproductions, GEAK's exp id) and ``warmstart/geak`` keys them
by GEAK's names; the index cache keeps ``curation_facts`` of every code record as
columns (``store/rows.py``), so ``git kb resolve`` chooses without reading a record
and reads only the ones it serves. A change to any rule here changes what the cache
holds: bump ``store/cache_file.LAYOUT_VERSION`` with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from hashlib import sha1, sha256

from gitkb.record.values import array, dig, mapping, number_or_numeric_string

CODE_TYPES = ("strategy", "reference-kernel")


@dataclass(slots=True, frozen=True)
class CurationFacts:
    """One code record's ``curation_facts``."""

    code: str | None  # 'source' or 'diff' (``code_of``); None: no code a run can use
    speedup: float | None
    bench_key: str | None
    direction: str  # folded (``optimization_direction``)
    reproductions: int
    exp_id: str  # GEAK's exp id, or the one an export gives it (``exp_id_of``)
    geak_gfx: str | None  # the gfx key of the GEAK entry it was imported from; None: mined here
    geak_kernel: str  # the raw kernel name GEAK keys its page by (``geak_kernel``)
    rocm: str | None  # ``evidence.raw.geak.verified_stack.rocm`` as text; None: not stated


def curation_facts(record: dict) -> CurationFacts:
    """The facts curation reads of a code record (``CODE_TYPES``)."""
    entry = geak_entry(record)
    stack = geak_fields(record).get("verified_stack")
    rocm = stack.get("rocm") if isinstance(stack, dict) else None
    found = code_of(record)
    return CurationFacts(
        code=found[0] if found else None,
        speedup=speedup(record),
        bench_key=bench_key(record),
        direction=optimization_direction(record),
        reproductions=reproductions(record),
        exp_id=exp_id_of(record),
        geak_gfx=entry[0] if entry else None,
        geak_kernel=geak_kernel(record),
        # GEAK's key reads it as ``str(rocm or "")``: any falsy value is no version
        rocm=str(rocm) if rocm else None,
    )


def speedup(record: dict) -> float | None:
    """The record's measured speedup (x): a stated one, else from the headline gain, else
    from the parent/new geomeans of ``evidence.raw.effect``; None when it states none."""
    metrics = mapping(dig(record, "retrieval", "signals", "metrics"))
    for key in ("speedup_x", "page_best_speedup_x"):
        stated = number_or_numeric_string(metrics.get(key))
        if stated and stated > 0:
            return stated
    gain = mapping(dig(record, "worth", "gain"))
    primary = gain.get("primary")
    for metric in array(gain.get("metrics")):
        if not isinstance(metric, dict) or (primary and metric.get("metric") != primary):
            continue
        delta = number_or_numeric_string(metric.get("delta_pct"))
        if delta is None:
            continue
        if metric.get("direction") == "higher-better":
            return 1 + delta / 100
        return 100 / (100 - delta) if delta < 100 else None
    effect = mapping(dig(record, "evidence", "raw", "effect"))
    parent = number_or_numeric_string(effect.get("parent_geomean_us"))
    new = number_or_numeric_string(effect.get("new_geomean_us"))
    if parent and new and new > 0:
        return parent / new
    return None


def bench_key(record: dict) -> str | None:
    """What the number was measured over; None when the record does not say (never a match).

    A stated ``evidence.raw.bench_key`` is used as is (an imported key is opaque: only an
    equal key compares); a record that states ``bench_key: null`` has none. Otherwise a
    digest of the metric and the sorted ``evidence.raw.bench_cases`` (a mined record's
    ``evidence.raw.effect.bench_cases``: the cases its trace measured), else of the primary
    metric's ``measured_over``.
    """
    raw = mapping(dig(record, "evidence", "raw"))
    stated = raw.get("bench_key")
    if isinstance(stated, str) and stated.strip():
        return stated.strip()
    if "bench_key" in raw:
        return None
    gain = mapping(dig(record, "worth", "gain"))
    metric = gain.get("primary") or "latency"
    stated_cases = raw.get("bench_cases") or mapping(raw.get("effect")).get("bench_cases")
    cases = [str(c) for c in array(stated_cases) if str(c).strip()]
    if not cases:
        cases = [
            m["measured_over"]
            for m in array(gain.get("metrics"))
            if isinstance(m, dict)
            and m.get("metric") == metric
            and isinstance(m.get("measured_over"), str)
            and m["measured_over"].strip()
        ][:1]
    if not cases:
        return None
    return workload_key(cases, metric)


def workload_key(cases: list[str], metric: str = "latency") -> str:
    """The bench key of ``metric`` measured over the workload ``cases`` (case ids): what a
    run's own numbers compare under, and a record's when it states its cases."""
    text = json.dumps([metric, sorted(cases)])
    return "bk:" + sha256(text.encode()).hexdigest()[:16]


def fold_direction(text: str) -> str:
    """A direction as compared, GEAK's way: trimmed and lowercased (inner spaces count)."""
    return text.strip().lower()


def optimization_direction(record: dict) -> str:
    """The optimization direction, folded: a stated one (``evidence.raw.direction``; stated
    empty stands alone), else the technique of the episode key (a slug: '_' reads as '-');
    '' when there is none."""
    raw = mapping(dig(record, "evidence", "raw"))
    stated = raw.get("direction")
    if isinstance(stated, str):
        return fold_direction(stated)
    parts = str(record.get("episode_key") or "").split("|")
    return fold_direction(parts[3].replace("_", "-")) if len(parts) >= 4 else ""


def code_of(record: dict) -> tuple[str, str] | None:
    """('source'|'diff', text) when the record carries code a run can use, else None."""
    impl = mapping(dig(record, "payload", "implementation"))
    fmt, snippet = impl.get("format"), impl.get("snippet")
    if not isinstance(fmt, str) or not isinstance(snippet, str) or not snippet.strip():
        return None
    if record.get("type") == "reference-kernel" and fmt.startswith("source"):
        return ("source", snippet)
    if record.get("type") == "strategy" and fmt.startswith("unified-diff"):
        return ("diff", snippet)
    return None


def reproductions(record: dict) -> int:
    """Times other admissions confirmed this record (``verified_effective``)."""
    value = number_or_numeric_string(
        dig(record, "worth", "track", "counters", "verified_effective")
    )
    return int(value) if value and value > 0 else 0


# ----------------------------------------------------------------- GEAK's names


def geak_fields(record: dict) -> dict:
    """``evidence.raw.geak`` of a record imported from GEAK; {} for any other."""
    return mapping(dig(record, "evidence", "raw", "geak"))


def geak_entry(record: dict) -> list[str] | None:
    """The four parts (gfx, kernel class, page slug, exp id) of the GEAK entry a record was
    imported from; None for a record mined here."""
    parts = str(geak_fields(record).get("entry") or "").split("/")
    return parts if len(parts) == 4 and all(parts) else None


def geak_kernel(record: dict) -> str:
    """The raw kernel name GEAK keys a record's page by: the one GEAK wrote (or its page
    slug's), else the scope's first operator, else its operator family."""
    entry = geak_entry(record)
    if entry is not None:
        return str(geak_fields(record).get("kernel_name") or entry[2].rsplit("__", 2)[0])
    scope = mapping(dig(record, "retrieval", "scope"))
    operators = [o for o in array(scope.get("operators")) if isinstance(o, str) and o.strip()]
    return operators[0] if operators else str(scope.get("operator_family") or "unknown")


def synthetic_exp_id(record_id: str) -> str:
    """An exp id for a record GEAK never wrote (mined here): no run time, so the time is
    zero; the hex is the record id's digest, stable across exports."""
    return "00000000_000000_" + sha1(record_id.encode()).hexdigest()[:6]


def exp_id_of(record: dict) -> str:
    """The record's GEAK exp id (a tie goes to the older), or the one an export gives it."""
    parts = str(geak_fields(record).get("entry") or "").split("/")
    return parts[3] if len(parts) == 4 and parts[3] else synthetic_exp_id(str(record.get("id")))
