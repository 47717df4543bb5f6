"""Long-horizon recon: episodes as structured attempts, the incumbent lineage, and which
journal, commit and figure back each one (docs/trace-format.md §5, rule 5)."""

from __future__ import annotations

from gitkb.trace.ingest import Ingest
from gitkb.trace.ladder import Ladder


def long_horizon(ingested: Ingest, ladder: Ladder) -> dict | None:
    """None when the trace holds no long-horizon evidence."""
    rows = [r for r in ingested.rows if r.long_horizon_status or r.episode is not None]
    if not rows:
        return None
    steps = {s.n: s for s in ladder.steps}
    attempts: list[dict] = []
    lineage = []
    for row in rows:
        step = steps[row.n]
        promoted = row.promotion and not row.carry_forward
        rejected = [
            e["index"]
            for e in row.experiments
            if str(e.get("decision") or "").lower() in ("revert", "reject_and_continue", "pivot")
        ]
        journal = row.journal_path or row.experiments_from
        if journal is None and row.journal is not None:
            journal = row.journal.path
        attempts.append(
            {
                "version": row.version,
                "episode": row.episode,
                "status": row.long_horizon_status,
                "promoted": promoted,
                "ladder": step.kind,
                "experiments": len(row.experiments),
                "rejected_experiments": rejected,
                "journal": journal,
                "commit": row.event_sha,
                "commit_kind": row.cited_commit_kind,
                "carried_from": row.carried_from,
                "geomean_us": row.geomean,
                "authoritative_improvement_pct": row.improvement_pct if promoted else None,
                "geomean_improvement_pct": step.geomean_pct,
                "gain_pct_used": step.improve_pct if step.kind in ("milestone", "mega") else None,
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
