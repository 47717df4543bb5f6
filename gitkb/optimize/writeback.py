"""Write-back: after a win with ``--kb STORE``, the run's own trace is mined into the store
under the run's label (the label its winner commit's ``KB-Trace`` trailer names). A
failure is reported in ``result.json``; the win and its commit stand.

After a warm start adopted a record's code, that adoption is the record's: its ledger
has the ``validated`` attestation (made when it was judged) and the write-back adds one
confirmation of it. The run's trace starts at the adopted code (see ``trace``), so
mining files only what the run changed on top of it, with gains measured against it.
"""

from __future__ import annotations

from gitkb.errors import GitkbError
from gitkb.optimize.setup import Run


def _confirm_adopted(run: Run) -> dict | None:
    """Confirm the adopted record; None when nothing was adopted."""
    from gitkb.warmstart.attest import confirm_adoption

    adopted = (run.warm_report or {}).get("adopted")
    if not adopted:
        return None
    found = {"record": adopted["record"], "action": "confirm", "commit": None}
    try:
        admission = confirm_adoption(run.kb, adopted["record"], run.trace_label, run.trace.start)
    except GitkbError as exc:  # the attestation stands; say why the count did not land
        run.say(f"[gitkb] write-back: {adopted['record']} not confirmed: {exc.message[:200]}")
        return dict(found, error=exc.message)
    found.update(commit=admission.commit, note=admission.note)
    return found


def write_back(run: Run) -> dict:
    """Confirm an adopted record, then mine the run's own trace into the knowledge base
    under the run's label."""
    from gitkb.mine.pipeline import mine

    adopted = _confirm_adopted(run)
    try:
        result = mine(run.output / "trace", store=run.kb, label=run.trace_label)
    except GitkbError as exc:  # the win and its commit stand; say why nothing was kept
        run.say(f"[gitkb] write-back failed: {exc.message[:200]}")
        failed = {"attempted": True, "success": False, "error": exc.message}
        return failed | ({"adopted": adopted} if adopted else {})
    summary = result.summary()
    kept = [
        {"action": o.action, "record": o.record_id, "commit": o.commit}
        for o in result.outcomes
        if o.action in ("insert", "confirm", "conflict")
    ]
    run.say(
        f"[gitkb] write-back into {run.kb.location}: "
        + (f"confirmed the adopted {adopted['record']}; " if adopted and adopted["commit"] else "")
        + (", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items())) or "nothing")
    )
    document = {
        "attempted": True,
        "success": True,
        "store": str(run.kb.location),
        "label": result.label,
        "counts": summary["counts"],
        "records": kept,
    }
    return document | ({"adopted": adopted} if adopted else {})
