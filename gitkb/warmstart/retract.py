"""Retraction: the store has no delete, a record is taken back by a tombstone commit.

The record stays (history is evidence). Its ``status`` becomes ``deprecated``
and its ``worth.rank.score`` 0, so every store gate keeps passing; the reason goes
into the commit trailers and a ledger line that also keeps what was zeroed, which
is what ``unretract`` restores.

The retire pass (``git kb curate --retire``) acts on the ledgers' retire hints:
it lists the unretracted records whose outcomes say retire and, when applied,
retracts each with the hint as its reason, one commit each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitkb import record as rec
from gitkb.errors import AdmissionRefused, GitkbError
from gitkb.layout import ledger_path
from gitkb.store.admission import RETIRED_STATUS, check_record, refuse_findings
from gitkb.store.writer import Change
from gitkb.vcs.plain import identity
from gitkb.warmstart.attest import (
    appended,
    event_line,
    one_line,
    parse_ledger,
    read_ledger,
    retire_hint,
)

if TYPE_CHECKING:
    from gitkb.store.store import Store
    from gitkb.store.view import StoreView
    from gitkb.store.writer import Admission, Builder
    from gitkb.warmstart.attest import Ledger

RETIRE_PASS = "retire pass"  # how a retire-pass reason begins


def _load(view: StoreView, record_id: str) -> tuple[str, dict]:
    loaded = view.read_record(record_id)
    if loaded.data is None:
        raise GitkbError(
            f"{record_id}: {loaded.path} is unreadable ({loaded.error}); nothing written"
        )
    return loaded.path, loaded.data


def _change(view: StoreView, action: str, record_id: str, path: str, record: dict,
            ledger: Ledger, event: dict, body: str,
            trailers: list[tuple[str, str]]) -> Change:  # fmt: skip
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


def _who(by: str | None) -> str:
    return one_line(by) if by and by.strip() else identity()


def retraction(view: StoreView, record_id: str, reason: str, who: str) -> Change:
    """The ``retract`` change of ``record_id`` against ``view`` (record and ledger line)."""
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


def retract(store: Store, record_id: str, reason: str, by: str | None = None) -> Admission:
    """Tombstone ``record_id``: one ``retract`` commit (record and ledger line)."""
    reason, who = _require_reason(reason), _who(by)
    return store.commit([lambda view: retraction(view, record_id, reason, who)])[0]


def unretract(store: Store, record_id: str, reason: str, by: str | None = None) -> Admission:
    """Lift a tombstone: restore the status and score the retraction recorded."""
    reason, who = _require_reason(reason), _who(by)

    def build(view: StoreView) -> Change:
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


# ----------------------------------------------------------------- the retire pass


def retire_candidates(view: StoreView) -> list[dict]:
    """The unretracted records whose ledger's retire hint fired, by id: id, type, hint and
    the ledger's counts. Reads the ledgers from the index cache."""
    live = [e for e in view.entries() if e.get("status") != RETIRED_STATUS]
    paths = {ledger_path(e["id"]): e for e in live}
    ledgers = view.read_files(list(paths))
    found = []
    for path, raw in sorted(ledgers.items()):
        counts = parse_ledger(path, raw).counts()
        hint = retire_hint(counts)
        if hint:
            entry = paths[path]
            found.append({"id": entry["id"], "type": entry.get("type"), "hint": hint,
                          "counts": counts})  # fmt: skip
    return found


def retire_pass(store: Store, apply: bool = False, by: str | None = None) -> dict:
    """List the records whose retire hint fired; with ``apply``, retract each with the hint
    as the reason, one commit each. A record whose hint no longer fires by the time it is
    written (a validation landed meanwhile) is skipped and said so."""
    if apply:
        store.require_signing()
    listed = retire_candidates(store.view())
    report = {"applied": apply, "records": listed, "retracted": 0}
    if not apply or not listed:
        return report
    who = _who(by)

    def builder(item: dict) -> Builder:
        def build(view: StoreView) -> Change:
            hint = retire_hint(read_ledger(view, item["id"]).counts())
            entry = view.entry(item["id"]) or {}
            if hint is None or entry.get("status") == RETIRED_STATUS:
                why = "its retire hint no longer fires" if hint is None else "already retracted"
                raise AdmissionRefused(f"{item['id']}: {why}; not retracted", [], item["id"])
            return retraction(view, item["id"], f"{RETIRE_PASS}: {hint}", who)

        return build

    admissions = store.commit([builder(item) for item in listed], on_refusal="skip")
    for item, admission in zip(listed, admissions, strict=True):
        item["commit"] = admission.commit
        if admission.action == "refused":
            item["skipped"] = admission.note
    report["retracted"] = sum(1 for a in admissions if a.action == "retract" and a.commit)
    return report
