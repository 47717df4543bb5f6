"""GEAK's identity rules and answer shape (docs/warm-start.md, "GEAK fidelity").

Followed: GEAK's ``kernel_workflow/scripts/experience_store.py`` and ``kb/`` as
of the fork iAmir97/GEAK @ a6a9d0e (``kb/identity.py`` as in AMD-AGI/GEAK).

- gfx: GEAK keys a page by the first ``gfx<digits>`` in a name, so ``gfx90a``
  files as ``gfx90``; ``page_for_gfx`` maps that key back to gitkb's page.
- slug: ``<name>__<language>__<gfx>``, the name canonical but case kept.
- service key: ``geak:kernel:<gfx>:<kernel_name>:<backend>:rocm:<major.minor>``
  and the version-less rung, each segment folded as GEAK's service checks it.
- answer: ``resolve``'s shape (``candidates`` with ``exp_dir`` and
  ``patch_path``; ``filtered`` counts; GEAK's read reasons).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache

import yaml

from gitkb import targets
from gitkb.record.curation import (
    bench_key,
    code_of,
    geak_entry,
    geak_fields,
    geak_kernel,
    synthetic_exp_id,
)
from gitkb.warmstart import curate

_PREFIXES = ("triton_", "hip_", "ck_", "cuda_", "torch_")
_SUFFIXES = (".py", ".hip", ".cu", ".cpp", "_task")
# The service's segment rule: lowercase, these characters, not starting with '.', '+' or '-'.
_SEGMENT = r"^[a-z0-9_][a-z0-9._+-]*$"
_OUTSIDE_SEGMENT = r"[^a-z0-9._+-]+"
_UNSAFE_SLUG = r"[^A-Za-z0-9._-]+"
SCHEME, DOMAIN, FRAMEWORK, NO_VERSION = "geak", "kernel", "rocm", "unspecified"


@cache
def _pattern(text: str) -> re.Pattern[str]:
    """``text`` compiled, on first use: resolve off a gfx page loads no ``re``."""
    return re.compile(text)


def gfx_key(text: object) -> str:
    """GEAK's page key of a gfx name: the first ``gfx<digits>``, lowercased; '' when none."""
    if not isinstance(text, str) or "gfx" not in text.lower():  # no gfx name: no ``re``
        return ""
    found = _pattern(r"(?i)gfx\d+").search(text)
    return found.group(0).lower() if found else ""


def page_for_gfx(text: object) -> targets.Hardware | None:
    """The hardware of the page GEAK files ``text`` under: a gfx id of the target table whose
    GEAK key is that key (``gfx90`` -> the gfx90a page: MI210, MI250), else the id itself as
    its own page; None when the text names no gfx id."""
    key = gfx_key(text)
    if not key:
        return None
    table = targets.table()
    if key in table:
        return table[key]
    pages = sorted({hw.page for hw in table.values() if hw.page and gfx_key(hw.page) == key})
    if len(pages) == 1:
        return table.get(pages[0]) or targets.identify(pages[0])
    return targets.identify(key)


def kept_case_name(name: str) -> str:
    """GEAK's canonical kernel name: basename, language prefixes and suffixes stripped
    (compared case-insensitively), the case kept."""
    base = os.path.basename(str(name or "").strip().rstrip("/"))
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            if len(base) > len(prefix) and base.lower().startswith(prefix):
                base, changed = base[len(prefix) :], True
        for suffix in _SUFFIXES:
            if len(base) > len(suffix) and base.lower().endswith(suffix):
                base, changed = base[: -len(suffix)], True
    return base or str(name or "")


def _slug_part(text: str) -> str:
    return (_pattern(_UNSAFE_SLUG).sub("-", str(text or "").strip()).strip("-.") or "x")[:80]


def slug(kernel_name: str, language: str, gfx: str) -> str:
    """GEAK's page folder name for a kernel, language and gfx id."""
    key = gfx_key(gfx) or "unknown"
    return f"{_slug_part(kept_case_name(kernel_name))}__{_slug_part(language)}__{key}"


def segment(value: object, fallback: str) -> str:
    """One key segment, folded as GEAK folds it: lowercase, runs outside ``[a-z0-9._+-]``
    made '-', leading characters that may not start a segment dropped, ASCII only."""
    folded = _pattern(_OUTSIDE_SEGMENT).sub("-", str(value or "").strip().lower())
    folded = _pattern(r"^[^a-z0-9_]+").sub("", folded).strip("-")
    folded = (folded or fallback).encode("ascii", "ignore").decode("ascii")[:256]
    return folded or fallback


def short_version(text: object) -> str:
    """A ROCm version cut to ``<major>.<minor>``; ``unspecified`` when none was observed."""
    raw = str(text or "").strip()
    if not raw:
        return NO_VERSION
    found = _pattern(r"\s*(\d+(?:\.\d+)?)").match(raw)
    return segment(found.group(1) if found else raw, NO_VERSION)


def service_keys(gfx: str, kernel_name: str, language: str, rocm: object) -> list[str]:
    """The page's GEAK service keys, exact first: ``...:rocm:<major.minor>``, ``...:rocm``."""
    head = [SCHEME, DOMAIN, segment(gfx_key(gfx), "unknown"), segment(kernel_name, "unknown"),
            segment(language, "unknown"), FRAMEWORK]  # fmt: skip
    return [":".join([*head, short_version(rocm)]), ":".join(head)]


def key_problem(key: str) -> str | None:
    """Why GEAK's service would refuse ``key`` (a segment that is not a slug component)."""
    parts = key.split(":")
    if len(parts) < 2:
        return f"{key!r} needs a scheme and at least one dimension"
    for n, part in enumerate(parts):
        if not _pattern(_SEGMENT).fullmatch(part):
            return f"segment {n} ({part!r}) of {key!r} is not a valid slug component"
    return None


def retire_hint(counts: dict) -> str:
    """GEAK's advisory text for an attestation ledger (every recall counts as an attempt)."""
    tried = counts.get("recalls") or 0
    if not tried:
        return ""
    if (counts.get("not_reproduced") or 0) >= 2 and not counts.get("validations"):
        return (
            f"{counts['not_reproduced']} attempts could not reproduce it at all and none ever "
            "succeeded — the record is probably missing something it promised"
        )
    if tried >= 3 and not counts.get("validations"):
        return f"tried {tried} times, never reproduced a win"
    return ""


@dataclass(slots=True, frozen=True)
class GeakEntry:
    """Where a record sits in a GEAK tree, and the names GEAK keys it by."""

    gfx: str  # GEAK's key of the page (gfx90 for gfx90a)
    kernel_class: str
    slug: str
    exp_id: str
    kernel_name: str  # raw, as GEAK wrote it (its service key uses it)
    language: str

    @property
    def where(self) -> str:
        return f"{self.gfx}/{self.kernel_class}/{self.slug}/{self.exp_id}"


def entry_of(record: dict, page: str | None, language: str) -> GeakEntry | None:
    """The record's GEAK entry: where the import read it, or, for a record mined here,
    where an export files it; None off a gfx page (GEAK keys AMD compile targets only)."""
    entry = geak_entry(record)
    if entry is not None:
        gfx, kernel_class, page_slug, exp_id = entry
        return GeakEntry(gfx, kernel_class, page_slug, exp_id, geak_kernel(record), language)
    gfx = gfx_key(page)
    if not gfx:
        return None
    scope = record.get("retrieval", {}).get("scope", {})
    family = str(scope.get("operator_family") or "unknown")
    name = geak_kernel(record)
    return GeakEntry(gfx, _slug_part(family), slug(name, language, gfx),
                     synthetic_exp_id(str(record.get("id"))), name, language)  # fmt: skip


def _raw(record: dict) -> dict:
    raw = record.get("evidence", {}).get("raw")
    return raw if isinstance(raw, dict) else {}


def meta_of(record: dict, entry: GeakEntry, speedup: float, reproductions: int,
            counts: dict, retired: bool, reason: str | None) -> dict:  # fmt: skip
    """The ``meta.yaml`` GEAK would hold for the record: what its resolve and service key
    read (identity, metric at full precision, direction, curation, attestations)."""
    fields, raw = geak_fields(record), _raw(record)
    # What it was measured on: GEAK serves an entry whose gpu_arch is not its page nowhere.
    metric = {"speedup": speedup, "gpu_arch": gfx_key(rec_measured(record)) or entry.gfx}
    effect = raw.get("effect") if isinstance(raw.get("effect"), dict) else {}
    for name, key in (("wall_ms", "new_geomean_us"), ("baseline_wall_ms", "baseline_geomean_us")):
        if isinstance(effect.get(key), (int, float)):
            metric[name] = effect[key] / 1000
    metric["metric_kind"] = str(fields.get("metric_kind") or "")
    metric["bench_key"] = bench_key(record) or ""
    metric["case_names"] = [str(c) for c in raw.get("bench_cases") or []]
    techniques = fields.get("techniques")
    if not isinstance(techniques, list):
        techniques = list(record.get("retrieval", {}).get("technique_tags") or [])
    direction = raw.get("direction")
    meta = {
        "lifecycle": "retracted" if retired else ("active" if reproductions else "candidate"),
        "carrier": "patch",
        "gfx": entry.gfx,
        "kernel_class": entry.kernel_class,
        "kernel_name": entry.kernel_name,
        "language": entry.language,
        "metric": metric,
        "direction": direction if isinstance(direction, str) else "",
        "reproductions": reproductions + 1,
        "strategy": str(fields.get("strategy") or ""),
        "techniques": [str(t) for t in techniques],
        "gitkb_record": record.get("id"),
    }
    for key in ("content_signature", "verified_on", "verified_stack", "derived_from", "upstream"):
        if fields.get(key) is not None:
            meta[key] = fields[key]
    if retired:
        meta["retained"] = False
        meta["retired_reason"] = reason or "retracted in gitkb"
    tally = {k: counts.get(k) or 0 for k in ("recalls", "validations", "failures",
                                              "not_reproduced", "inapplicable")}  # fmt: skip
    if any(tally.values()):
        meta["attestations"] = tally | {
            k: counts.get(k) or "" for k in ("last_outcome", "last_at", "last_by")
        }
    return meta


def rec_measured(record: dict) -> str:
    summary = record.get("evidence", {}).get("summary")
    measured = summary.get("measured_on") if isinstance(summary, dict) else None
    gpu = measured.get("gpu") if isinstance(measured, dict) else None
    return gpu if isinstance(gpu, str) else ""


def report_of(record: dict) -> str:
    """``report.md``: the record's prose, the two sections GEAK's lane reads first."""
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    problem = payload.get("problem") if isinstance(payload.get("problem"), dict) else {}
    lines = [str(problem.get("statement") or record.get("id")), ""]
    mechanism = payload.get("mechanism")
    if isinstance(mechanism, str) and mechanism.strip():
        lines += ["## Key optimizations", mechanism.strip(), ""]
    dead = _raw(record).get("dead_ends_md")
    if isinstance(dead, str) and dead.strip():
        lines += ["## What didn't work", dead.strip(), ""]
    return "\n".join(lines)


def entry_files(meta: dict, diff: str, report: str) -> dict[str, bytes]:
    """An entry folder's files, as GEAK writes them."""
    return {
        "meta.yaml": yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).encode(),
        "patch.diff": diff.encode(),
        "report.md": report.encode(),
    }


# gitkb's read reasons -> GEAK's (the ones GEAK's lane branches on).
_REASONS = {
    "kernel_not_found": "kernel_page_not_found",
    "ambiguous": "ambiguous_kernel_page",
    "no_same_language": "no_page_for_language",
}


def _candidate_entry(candidate: curate.CodeRecord) -> GeakEntry | None:
    return entry_of(candidate.record, candidate.page, candidate.language)


def _where(entry: GeakEntry | None, root: str) -> str:
    where = entry.where if entry else ""
    return f"{root.rstrip('/')}/{where}" if root else where


def _direction(candidate: curate.CodeRecord) -> str:
    stated = _raw(candidate.record).get("direction")
    return stated if isinstance(stated, str) else candidate.direction


def _techniques(candidate: curate.CodeRecord) -> list[str]:
    stated = geak_fields(candidate.record).get("techniques")
    if isinstance(stated, list):
        return [str(t) for t in stated]
    return list(candidate.record.get("retrieval", {}).get("technique_tags") or [])


def answer(found: dict, ranks: list[curate.CodeRecord], language: str | None, root: str,
           prose: list[str]) -> dict:  # fmt: skip
    """GEAK's ``resolve`` answer for gitkb's ``found`` (its answer) and ranks: ``exp_dir``
    and ``patch_path`` under ``root`` (the ``--out`` tree; relative without one)."""
    hardware = found.get("hardware") or {}
    gfx = gfx_key(hardware.get("page") or "")
    if not gfx:
        return {"read_reason": "missing_arch", "candidates": []}
    kernel = found["kernel"]
    requested = slug(kernel["query"], language or "", gfx)
    entries = [_candidate_entry(c) for c in ranks]
    page_slug = entries[0].slug if entries and entries[0] else requested
    tier = kernel.get("tier") or "none"
    if kernel.get("ambiguous"):
        tier = "ambiguous"
    elif tier == "exact" and page_slug != requested:
        tier = "normalized"  # GEAK's exact tier is the slug itself, case kept
    others = sorted(
        {slug(name, p["language"], gfx) for p in found.get("other_language_pages", [])
         if p.get("product") == hardware.get("page") for name in kernel.get("matched", [])}
    ) if tier != "exact" else []  # fmt: skip
    base = {
        "slug": page_slug,
        "requested_slug": requested,
        "match_tier": tier,
        "other_language_pages": others,
        "ambiguous_pages": [slug(n, language or "", gfx) for n in kernel.get("ambiguous", [])],
        "candidates": [],
    }
    reason = found["read_reason"]
    if reason == "no_same_arch":
        reason = "no_same_arch" if kernel.get("on_page") else "kernel_page_not_found"
    if reason in _REASONS or (reason == "kernel_page_not_found"):
        return base | {"read_reason": _REASONS.get(reason, reason)}
    counts = found["counts"]
    filtered = {
        "total": counts["same_arch"],
        "retired": counts["retired"],
        "below_min_speedup": counts["below_floor"],
        "min_speedup": found["options"]["min_speedup"],
    }
    if reason != "read":
        return base | {"read_reason": reason, "filtered": filtered}
    filtered["same_direction_collapsed"] = counts["collapsed"]
    first_key = ranks[0].bench_key or ""
    candidates = []
    for n, (candidate, entry, prose_path) in enumerate(zip(ranks, entries, prose, strict=True), 1):
        bench = candidate.bench_key or ""
        exp_dir = _where(entry, root)
        candidates.append({
            "rank": n,
            "exp_dir": exp_dir,
            "speedup": round(candidate.speedup or 0.0, 4),
            "arch": gfx,
            "patch_path": f"{exp_dir}/patch.diff",
            "prose_path": prose_path,
            "strategy": str(geak_fields(candidate.record).get("strategy") or ""),
            "direction": _direction(candidate),
            "techniques": _techniques(candidate),
            "bench_key": bench,
            "metric_kind": str(geak_fields(candidate.record).get("metric_kind") or ""),
            "comparable": bool(bench) and bench == first_key,
            "alternates": [_alternate(alt, root) for alt in candidate.alternates],
            "validations": candidate.counts.get("validations", 0),
            "recalls": candidate.counts.get("recalls", 0),
            "retire_hint": retire_hint(candidate.counts),
            "status": "read",
            "slug": entry.slug if entry else page_slug,
            "gitkb_id": candidate.record_id,
        })  # fmt: skip
    return base | {"read_reason": "read", "candidates": candidates, "filtered": filtered}


def _alternate(candidate: curate.CodeRecord, root: str) -> dict:
    exp_dir = _where(_candidate_entry(candidate), root)
    return {
        "exp_dir": exp_dir,
        "patch_path": f"{exp_dir}/patch.diff",
        "speedup": round(candidate.speedup or 0.0, 4),
        "bench_key": candidate.bench_key or "",
        "techniques": _techniques(candidate),
    }


def keys_of(candidate: curate.CodeRecord) -> list[str]:
    """The GEAK service keys of a candidate's page (exact rung first), from its raw kernel
    name and the ROCm it was measured on; [] off a gfx page. Read from its facts alone (as
    ``entry_of`` files it), so the page's keys need no record read."""
    facts = candidate.facts
    gfx = facts.geak_gfx or gfx_key(candidate.page)
    if not gfx:
        return []
    return service_keys(gfx, facts.geak_kernel, candidate.language, facts.rocm)


def page_keys(candidates: list[curate.CodeRecord]) -> list[str]:
    """Every GEAK service key the page's candidates are filed under, sorted."""
    return sorted({key for c in candidates for key in keys_of(c)})


def files_of(candidate: curate.CodeRecord, reason: str | None = None) -> tuple[str, dict] | None:
    """(entry folder, its files) of a candidate as a GEAK tree holds it; None for a record
    GEAK cannot hold (no unified diff, or off a gfx page)."""
    entry = _candidate_entry(candidate)
    code = code_of(candidate.record)
    if entry is None or code is None or code[0] != "diff" or candidate.speedup is None:
        return None
    meta = meta_of(candidate.record, entry, candidate.speedup, candidate.reproductions,
                   candidate.counts, candidate.retired, reason)  # fmt: skip
    return entry.where, entry_files(meta, code[1], report_of(candidate.record))
