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
from gitkb.optimize.setup import RunSetup
from gitkb.store import Store
from gitkb.warmstart.attest import confirm_adoption


def _confirm_adopted(setup: RunSetup, store: Store, adopted: dict) -> dict:
    """Confirm the adopted record (``adopted``: the warm start's report entry)."""
    found = {"record": adopted["record"], "action": "confirm", "commit": None}
    start = setup.trace.start
    if start is None:  # a trace that never started has no run to confirm the record with
        return dict(found, error="the run's trace has no v0 commit")
    try:
        admission = confirm_adoption(store, adopted["record"], setup.trace_label, start)
    except GitkbError as exc:  # the attestation stands; say why the count did not land
        setup.say(f"[gitkb] write-back: {adopted['record']} not confirmed: {exc.message[:200]}")
        return dict(found, error=exc.message)
    found.update(commit=admission.commit, note=admission.note)
    return found


def write_back(setup: RunSetup, store: Store, adopted: dict | None) -> dict:
    """Into the opened knowledge base ``store``: confirm the adopted record (``adopted``:
    the warm start's entry for it, None when nothing was adopted), then mine the run's own
    trace into it under the run's label."""
    from gitkb.mine.pipeline import mine

    confirmed = _confirm_adopted(setup, store, adopted) if adopted else None
    try:
        result = mine(setup.output / "trace", store=store, label=setup.trace_label)
    except GitkbError as exc:  # the win and its commit stand; say why nothing was kept
        setup.say(f"[gitkb] write-back failed: {exc.message[:200]}")
        failed = {"attempted": True, "success": False, "error": exc.message}
        return failed | ({"adopted": confirmed} if confirmed else {})
    summary = result.summary()
    kept = [
        {"action": o.action, "record": o.record_id, "commit": o.commit}
        for o in result.outcomes
        if o.action in ("insert", "confirm", "conflict")
    ]
    setup.say(
        f"[gitkb] write-back into {store.location}: "
        + (
            f"confirmed the adopted {confirmed['record']}; "
            if confirmed and confirmed["commit"]
            else ""
        )
        + (", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items())) or "nothing")
    )
    document = {
        "attempted": True,
        "success": True,
        "store": str(store.location),
        "label": result.label,
        "counts": summary["counts"],
        "records": kept,
    }
    return document | ({"adopted": confirmed} if confirmed else {})
