"""Long-horizon recon: episodes as structured attempts, the incumbent lineage, and which
journal and commit back each one (TRACE_FORMAT §5, gitkb rule 5)."""

from __future__ import annotations

from gitkb.trace.ingest import Ingest


def long_horizon(ingested: Ingest) -> dict | None:
    """None when the trace holds no long-horizon evidence."""
    rows = [r for r in ingested.rows if r.long_horizon_status or r.episode is not None]
    if not rows:
        return None
    attempts = []
    lineage = []
    for row in rows:
        promoted = row.episode is not None and not row.carry_forward
        rejected = [
            e["index"]
            for e in row.experiments
            if str(e.get("decision") or "").lower() in ("revert", "reject_and_continue", "pivot")
        ]
        attempts.append(
            {
                "version": row.version,
                "episode": row.episode,
                "status": row.long_horizon_status,
                "promoted": promoted,
                "experiments": len(row.experiments),
                "rejected_experiments": rejected,
                "journal": row.journal_path or (row.memory_path if row.experiments else None),
                "commit": row.event_sha,
                "carried_from": row.carried_from,
                "geomean_us": row.geomean,
                "improvement_pct": row.improvement_pct,
            }
        )
        if promoted:
            lineage.append(row.version)
    statuses: dict[str, int] = {}
    for attempt in attempts:
        key = attempt["status"] or "unknown"
        statuses[key] = statuses.get(key, 0) + 1
    return {
        "attempts": attempts,
        "incumbent_lineage": lineage,
        "status_counts": statuses,
        "journals": sorted({a["journal"] for a in attempts if a["journal"]}),
    }
