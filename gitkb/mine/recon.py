"""Recon: the evidence-density report of a trace (mechanical counts only,
docs/trace-format.md §6.2)."""

from __future__ import annotations

from gitkb import record as rec
from gitkb.mine.labels import LabelChoice
from gitkb.mine.longhorizon import long_horizon
from gitkb.store import Store
from gitkb.trace.ingest import Ingest
from gitkb.trace.ladder import Ladder


def store_coverage(store: Store | None, slug: str, label: str) -> dict:
    """What the store already holds for this operator, grouped by the trace it came from."""
    if store is None:
        return {"store": None}
    by_source: dict[str, list[str]] = {}
    keys: list[str] = []
    types: dict[str | None, int] = {}
    highest: dict[str, int] = {}
    view = store.view()
    for row in view.scoped_rows(family=slug):
        entry = row.entry
        if entry is None:
            continue
        data = view.read_row(row).data or {}
        raw = rec.dig(data, "evidence", "raw")
        raw = raw if isinstance(raw, dict) else {}
        source = raw.get("source_repo") or "(unrecorded)"
        by_source.setdefault(source, []).append(str(raw.get("version") or "?"))
        if entry.get("episode_key") and len(keys) < 12:
            keys.append(entry["episode_key"])
        types[entry.get("type")] = types.get(entry.get("type"), 0) + 1
        tail = entry["id"].rsplit("-", 1)[-1]
        if len(tail) > 1 and tail[0].isalpha() and tail[1:].isdigit():
            highest[tail[0]] = max(highest.get(tail[0], 0), int(tail[1:]))
    return {
        "store": str(store.location),
        "by_source_repo": by_source,
        "this_label_present": label in by_source,
        "episode_keys": keys,
        "types": types,
        "highest_id_number": highest,
    }


def recon(
    ingested: Ingest, ladder: Ladder, store: Store | None = None, label: LabelChoice | None = None
) -> dict:
    meta, rows = ingested.meta, ingested.rows
    dsl_runs: list[list] = []
    for row in rows:
        if dsl_runs and dsl_runs[-1][0] == row.dsl:
            dsl_runs[-1][1] += 1
        else:
            dsl_runs.append([row.dsl, 1])
    milestones = ladder.milestones
    rejections: dict[str, int] = {}
    for step in ladder.steps:
        if step.kind == "rejected":
            reason = step.reason.split(" (")[0]
            rejections[reason] = rejections.get(reason, 0) + 1
    usable = [c for c in ingested.captures if c.usable]
    kernels: dict[str, int] = {}
    for capture in ingested.captures:
        kernels[capture.kernel or "(none)"] = kernels.get(capture.kernel or "(none)", 0) + 1
    deadends = ladder.deadends
    list_form = [s for s in deadends if ingested.row(s.n).deadend_items]
    numbers = [r for r in rows if r.geomean is not None]
    return {
        "identity": {
            "operator": meta.operator_name,
            "operator_basis": meta.operator_basis,
            "slug": meta.operator_slug,
            "workload_family": meta.workload_family,
            "label": meta.label,
            "label_basis": label.basis if label else None,
            "label_note": label.note() if label else "",
            "head": meta.head[:12],
            "target": {"vendor": meta.vendor, "arch": meta.arch, "product": meta.product},
            "hardware_basis": meta.hardware_basis,
            "n_shapes": meta.n_shapes,
            "constants": meta.constants,
            "var_axes": meta.var_axes,
        },
        "dsl_sequence": dsl_runs,
        "coverage": {
            "versions": len(rows),
            "with_commit": sum(r.has_commit for r in rows),
            "with_memory": sum(r.has_memory for r in rows),
            "with_code": sum(bool(r.code_sha) for r in rows),
            "kept": sum(r.has_commit and not r.reverted for r in rows),
            "reverted": sum(r.reverted for r in rows),
            "carry_forward": sum(r.has_memory and r.carry_forward for r in rows),
            "variants": len(ingested.variants),
            "profile_dirs": len(ingested.captures),
        },
        "citable_numbers": {
            "milestones_with_geomean": sum(
                ingested.row(s.n).geomean is not None for s in milestones
            ),
            "milestones": len(milestones),
            "versions_with_geomean": len(numbers),
            "versions": len(rows),
        },
        "ladder": [
            {
                "version": s.version,
                "kind": s.kind,
                "improve_pct": s.improve_pct,
                "reason": s.reason,
                "geomean_us": ingested.row(s.n).geomean,
            }
            for s in ladder.steps
        ],
        "final_reference_kernel": f"v{ladder.final}" if ladder.final is not None else None,
        "rejections": rejections,
        "deadends": {
            "versions": len(deadends),
            "list_form": len(list_form),
            "prose_form": len(deadends) - len(list_form),
        },
        "captures": {
            "usable": len(usable),
            "total": len(ingested.captures),
            "by_kernel": kernels,
            "unusable": [
                {"dir": c.dir, "reason": c.reason} for c in ingested.captures if not c.usable
            ],
            "reports": sum(bool(c.conclusion) for c in ingested.captures),
        },
        "degradations": [
            {"version": r.version, "problems": r.problems} for r in rows if r.problems
        ],
        "refused_paths": sorted(set(ingested.refused)),
        "variants": ingested.variants,
        "non_version_files": ingested.non_version_files,
        "store_coverage": store_coverage(store, meta.operator_slug, meta.label),
        "long_horizon": long_horizon(ingested, ladder),
        "expected_yield": {
            "strategies": max(0, len(milestones) - 1),
            "anti_strategies_at_most": sum(
                len(ingested.row(s.n).deadend_items) or 1 for s in deadends
            ),
            "reference_kernels_at_most": 1,
        },
    }
