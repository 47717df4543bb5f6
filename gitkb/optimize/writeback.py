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
from gitkb.warmstart.attest import confirm_adoption


def _confirm_adopted(setup: RunSetup, adopted: dict) -> dict:
    """Confirm the adopted record (``adopted``: the warm start's report entry)."""
    found = {"record": adopted["record"], "action": "confirm", "commit": None}
    try:
        admission = confirm_adoption(
            setup.kb, adopted["record"], setup.trace_label, setup.trace.start
        )
    except GitkbError as exc:  # the attestation stands; say why the count did not land
        setup.say(f"[gitkb] write-back: {adopted['record']} not confirmed: {exc.message[:200]}")
        return dict(found, error=exc.message)
    found.update(commit=admission.commit, note=admission.note)
    return found


def write_back(setup: RunSetup, adopted: dict | None) -> dict:
    """Confirm the adopted record (``adopted``: the warm start's entry for it, None when
    nothing was adopted), then mine the run's own trace into the knowledge base under the
    run's label."""
    from gitkb.mine.pipeline import mine

    confirmed = _confirm_adopted(setup, adopted) if adopted else None
    try:
        result = mine(setup.output / "trace", store=setup.kb, label=setup.trace_label)
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
        f"[gitkb] write-back into {setup.kb.location}: "
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
        "store": str(setup.kb.location),
        "label": result.label,
        "counts": summary["counts"],
        "records": kept,
    }
    return document | ({"adopted": confirmed} if confirmed else {})
