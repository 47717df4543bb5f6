"""Write-back: after a win with ``--kb STORE``, the run's own trace is mined into the store
under the run's label (the label its winner commit's ``KB-Trace`` trailer names). A
failure is reported in ``result.json``; the win and its commit stand.
"""

from __future__ import annotations

from gitkb.errors import GitkbError
from gitkb.optimize.setup import Run


def write_back(run: Run) -> dict:
    """Mine the run's own trace into the knowledge base under the run's label."""
    from gitkb.mine.pipeline import mine

    try:
        result = mine(run.output / "trace", store=run.kb, label=run.trace_label)
    except GitkbError as exc:  # the win and its commit stand; say why nothing was kept
        run.say(f"[gitkb] write-back failed: {exc.message[:200]}")
        return {"attempted": True, "success": False, "error": exc.message}
    summary = result.summary()
    kept = [
        {"action": o.action, "record": o.record_id, "commit": o.commit}
        for o in result.outcomes
        if o.action in ("insert", "confirm", "conflict")
    ]
    run.say(
        f"[gitkb] write-back into {run.kb.location}: "
        + (", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items())) or "nothing")
    )
    return {
        "attempted": True,
        "success": True,
        "store": str(run.kb.location),
        "label": result.label,
        "counts": summary["counts"],
        "records": kept,
    }
