"""Retraction: the store has no delete, a record is taken back by a tombstone commit.

The record stays (history is evidence). Its ``status`` becomes ``deprecated``
and its ``worth.rank.score`` 0, in the record and its index entry alike, so
every store gate keeps passing; the reason goes into the commit trailers and a
ledger line that also keeps what was zeroed, which is what ``unretract``
restores.
"""

from __future__ import annotations

from gitkb import record as rec
from gitkb.errors import AdmissionRefused, GitkbError
from gitkb.warmstart.attest import appended, event_line, one_line, read_ledger

RETIRED_STATUS = "deprecated"


def _load(store, tip, index, record_id):
    entry = index.entry(record_id)
    if entry is None:
        raise GitkbError(f"no record {record_id} in {store.location}")
    path = entry.get("path") or ""
    loaded = rec.load(path, store.repo.read(tip, path) or b"")
    if loaded.data is None:
        raise GitkbError(f"{record_id}: {path} is unreadable ({loaded.error}); nothing written")
    return path, loaded.data


def _change(store, index, action, record_id, path, record, ledger, event, body, trailers):
    from gitkb.store import INDEX_PATH, _Change

    _, findings = store.check_record(record, path)
    if findings:
        lines = "\n".join(f.line() for f in findings[:10])
        raise AdmissionRefused(f"{action} {record_id} refused by the gates:\n{lines}", findings)
    index.put(rec.index_entry(record, path))
    return _Change(
        action,
        record_id,
        {
            path: rec.dumps(record),
            INDEX_PATH: index.dumps(),
            ledger.path: appended(ledger, True, event),
        },
        path=path,
        body=body,
        trailers=trailers,
        index=index,
    )


def _require_reason(reason: str | None) -> str:
    if not reason or not reason.strip():
        raise GitkbError("a reason is required (--reason TEXT)", 2)
    return one_line(reason)


def retract(store, record_id: str, reason: str, by: str | None = None):
    """Tombstone ``record_id``: one ``retract`` commit (record, index entry, ledger line)."""
    from gitkb.vcs.repository import identity

    reason = _require_reason(reason)
    who = one_line(by) if by and by.strip() else identity()

    def build(tip, index):
        path, record = _load(store, tip, index, record_id)
        ledger = read_ledger(store, record_id, tip)
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
            f"{was['score']} -> 0 (record and index entry). The record stays; "
            "git kb unretract restores both."
        )
        trailers = [("KB-Reason", reason), ("KB-By", who)]
        return _change(
            store, index, "retract", record_id, path, record, ledger, event, body, trailers
        )

    return store._write(build)


def unretract(store, record_id: str, reason: str, by: str | None = None):
    """Lift a tombstone: restore the status and score the retraction recorded."""
    from gitkb.vcs.repository import identity

    reason = _require_reason(reason)
    who = one_line(by) if by and by.strip() else identity()

    def build(tip, index):
        path, record = _load(store, tip, index, record_id)
        ledger = read_ledger(store, record_id, tip)
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
        return _change(
            store, index, "unretract", record_id, path, record, ledger, event, body, trailers
        )

    return store._write(build)
