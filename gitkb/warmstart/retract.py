"""Retraction: the store has no delete, a record is taken back by a tombstone commit.

The record stays (history is evidence). Its ``status`` becomes ``deprecated``
and its ``worth.rank.score`` 0, so every store gate keeps passing; the reason goes
into the commit trailers and a ledger line that also keeps what was zeroed, which
is what ``unretract`` restores.
"""

from __future__ import annotations

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.store.admission import RETIRED_STATUS, check_record, refuse_findings
from gitkb.store.writer import Change
from gitkb.vcs.plain import identity
from gitkb.warmstart.attest import appended, event_line, one_line, read_ledger


def _load(view, record_id):
    loaded = view.read_record(record_id)
    if loaded.data is None:
        raise GitkbError(
            f"{record_id}: {loaded.path} is unreadable ({loaded.error}); nothing written"
        )
    return loaded.path, loaded.data


def _change(view, action, record_id, path, record, ledger, event, body, trailers) -> Change:
    _, findings = check_record(view, record, path, action)
    if findings:
        raise refuse_findings(f"{action} {record_id}", findings, record_id)
    return Change(
        action,
        record_id,
        {path: rec.dumps(record), ledger.path: appended(ledger, True, event)},
        path=path,
        body=body,
        trailers=trailers,
    )


def _require_reason(reason: str | None) -> str:
    if not reason or not reason.strip():
        raise GitkbError("a reason is required (--reason TEXT)", 2)
    return one_line(reason)


def retract(store, record_id: str, reason: str, by: str | None = None):
    """Tombstone ``record_id``: one ``retract`` commit (record and ledger line)."""
    reason = _require_reason(reason)
    who = one_line(by) if by and by.strip() else identity()

    def build(view):
        path, record = _load(view, record_id)
        ledger = read_ledger(view, record_id)
        if record.get("status") == RETIRED_STATUS:
            raise GitkbError(f"{record_id} is already {RETIRED_STATUS}; nothing to retract")
        rank = rec.object_at(record, f"{record_id} ({path})", "worth", "rank")
        was = {"status": record.get("status"), "score": rank.get("score")}
        record["status"] = RETIRED_STATUS
        rank["score"] = 0
        event = event_line("retract", reason=reason, by=who, was=was)
        body = (
            f"Retracted by {who}: {reason}\n\n"
            f"Zeroed: status {was['status']} -> {RETIRED_STATUS}, worth.rank.score "
            f"{was['score']} -> 0 (the record). The record stays; "
            "git kb unretract restores both."
        )
        trailers = [("KB-Reason", reason), ("KB-By", who)]
        return _change(view, "retract", record_id, path, record, ledger, event, body, trailers)

    return store.commit([build])[0]


def unretract(store, record_id: str, reason: str, by: str | None = None):
    """Lift a tombstone: restore the status and score the retraction recorded."""
    reason = _require_reason(reason)
    who = one_line(by) if by and by.strip() else identity()

    def build(view):
        path, record = _load(view, record_id)
        ledger = read_ledger(view, record_id)
        open_retraction = ledger.open_retraction()
        if record.get("status") != RETIRED_STATUS or open_retraction is None:
            raise GitkbError(
                f"{record_id} is not retracted (status {record.get('status')}, "
                f"{'an' if open_retraction else 'no'} open retraction in {ledger.path})"
            )
        was = open_retraction.get("was") if isinstance(open_retraction.get("was"), dict) else {}
        rank = rec.object_at(record, f"{record_id} ({path})", "worth", "rank")
        record["status"] = was.get("status") or "active"
        score = was.get("score")
        rank["score"] = score if isinstance(score, (int, float)) else 0
        counts = ledger.counts()
        event = event_line("unretract", reason=reason, by=who)
        body = (
            f"Un-retracted by {who}: {reason}\n\n"
            f"Restored: status {RETIRED_STATUS} -> {record['status']}, worth.rank.score "
            f"0 -> {rank['score']}. Validations on the ledger: {counts['validations']}."
        )
        trailers = [("KB-Reason", reason), ("KB-By", who)]
        return _change(view, "unretract", record_id, path, record, ledger, event, body, trailers)

    return store.commit([build])[0]
