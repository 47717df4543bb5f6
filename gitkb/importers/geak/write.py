"""Importing a GEAK tree as a sync: the tree against what the store holds for it.

Each entry is compared with its record (the id is a function of the entry) and
the differences become the store's own actions, through its one write path
(``store.commit`` with ``Change`` objects):

- ``insert``: an entry the store has not seen; all new records land in one
  ``import`` commit (gated first; what cannot become a valid record is skipped
  with the reason);
- ``confirm``: a reproduction (GEAK's ``reproductions`` grew, or another entry on
  the page holds byte-identical code: the higher speedup is the record, the
  other its reproduction) or a re-measurement (the record keeps its first
  number: the store has no edit of a measurement);
- ``attest``: attestations GEAK counted since (history items and a tally);
- ``retract``: an entry GEAK's curation has since retired.

Every step is counted by a key or compared with what the store holds, so a
re-import of an unchanged tree plans nothing and writes nothing, and a step
already applied (by a concurrent import) is a no-op when its change is built.
An entry GEAK un-retired is only noted: lifting a tombstone is ``git kb
unretract``'s. ``dry_run`` returns the plan and writes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.importers import ImportReport
from gitkb.importers.geak import mapper, reader
from gitkb.layout import ledger_path
from gitkb.record.signature import content_signature
from gitkb.record.values import array
from gitkb.store import Store
from gitkb.store.view import StoreView
from gitkb.store.writer import Builder, Change
from gitkb.warmstart import geak
from gitkb.warmstart.attest import appended, confirm_change, parse_ledger
from gitkb.warmstart.curate import RETIRED_STATUSES, page_of

_BY = "geak import"


@dataclass
class Step:
    """One planned action on one record, and the entries it comes from."""

    action: str  # insert, confirm, attest, retract
    record_id: str
    entries: list[str]
    detail: str
    keys: list[str] = field(default_factory=list)  # confirm keys to count
    events: list[dict] = field(default_factory=list)  # ledger lines to append
    record: dict | None = None  # the record an insert adds
    entry: reader.Entry | None = None  # the entry an attest step reads again at commit time

    def as_json(self) -> dict:
        return {"action": self.action, "record": self.record_id, "entries": self.entries,
                "detail": self.detail}  # fmt: skip


def _page(record: dict) -> tuple:
    """The GEAK page a record is on: product, measured product and language."""
    scope = rec.scope_of(record)
    measured = rec.dig(record, "evidence", "summary", "measured_on", "gpu")
    product = scope.get("product") if isinstance(scope.get("product"), str) else None
    return (
        scope.get("vendor"),
        page_of(product, None),
        page_of(None, measured if isinstance(measured, str) else None),
        rec.language_of(record),
        tuple(rec.scope_of(record).get("operators") or ()),
    )


def _skip(report: ImportReport, where: str, exc: reader.Skip) -> None:
    report.skipped.append({"entry": where, "reason": str(exc)})


def _read(
    view: StoreView, root: Path, report: ImportReport
) -> tuple[int, list[tuple[reader.Entry, dict]]]:
    """(entry, its strategy record) of every entry to compare with the store; the rest
    are skipped. An entry whose files are byte for byte those its record was imported
    from is not read again (its record id follows from its path): a re-import costs in
    proportion to what changed. Also how many entry folders the tree holds."""
    folders, skipped = reader.entries(root)
    report.skipped.extend(skipped)
    read = []
    for folder in folders:
        where = folder.relative_to(root).as_posix()
        try:
            place = reader.locate(folder, root)
        except reader.Skip as exc:
            _skip(report, where, exc)
            continue
        held_id = mapper.record_id(place.hardware, place.language, place.kernel, place.exp_id)
        if held_id in view:
            held = view.read_record(held_id).data or {}
            stated = geak.geak_fields(held).get("digest")
            if stated and stated == reader.digest(folder):
                continue
        try:
            entry = reader.read_entry(folder, root, place)
        except reader.Skip as exc:
            _skip(report, where, exc)
            continue
        if entry.mislabeled:
            report.notes.append({
                "entry": entry.where,
                "note": f"filed under {entry.gfx_key} but measured on {entry.measured_gfx} "
                "(metric.gpu_arch): mislabeled, served on neither page (as GEAK does)",
            })  # fmt: skip
        read.append((entry, mapper.strategy(entry)))
    return len(folders), read


def _best_first(item: tuple[reader.Entry, dict]) -> tuple:
    entry = item[0]
    return (-entry.speedup, entry.exp_id)


def _gated(store: Store, entry: reader.Entry, record: dict, report: ImportReport) -> list[dict]:
    """The entry's record and its anti-strategies that pass the gates; the rest skipped."""
    kept: list[dict] = []
    for candidate in [record, *mapper.anti_strategies(entry, record)]:
        _, findings = store.check_record(candidate, rec.path_for(candidate))
        if findings:
            reason = "; ".join(f"{f.gate}: {f.message}" for f in findings[:3])
            report.skipped.append({"entry": f"{entry.where} ({candidate['type']})",
                                   "reason": reason})  # fmt: skip
        elif candidate is record or candidate["id"] not in {k["id"] for k in kept}:
            kept.append(candidate)
    return kept


def _twin_in_store(view: StoreView, record: dict) -> tuple[str | None, set[str]]:
    """The store's record holding the same code on the same page, if any, and the
    measurements (confirm keys) it has counted."""
    signature = content_signature(record)
    for row in view.rows_with_signature(signature) if signature else []:
        if row.id is None or row.entry is None or row.entry.get("type") != record["type"]:
            continue
        held = view.read_row(row).data
        if held is not None and _page(held) == _page(record):
            return row.id, set(array(rec.dig(held, "worth", "track", "confirm_keys")))
    return None, set()


def plan(store: Store, folder: str | os.PathLike) -> tuple[ImportReport, list[Step]]:
    """The steps that bring the store up to the tree, against the store's tip."""
    root = reader.store_root(folder)
    report = ImportReport("geak", None)
    view = store.view()
    # One cache snapshot for the whole comparison: each read of the view would open (and
    # check) one of its own.
    with view.cache.snapshot(view.tip):
        found, read = _read(view, root, report)
        if not found and not report.skipped:
            raise GitkbError(
                f"{folder}: no GEAK entries (<gfx>/<kernel_class>/<slug>/<exp_id>/meta.*)"
            )
        steps, inserts = _compare(store, view, read, report)
    ordered = list(inserts.values()) + steps
    report.imported = len(inserts)
    report.steps = [s.as_json() for s in ordered]
    return report, ordered


def _compare(
    store: Store, view: StoreView, read: list[tuple[reader.Entry, dict]], report: ImportReport
) -> tuple[list[Step], dict[str, Step]]:
    """The tree's entries against the store: (steps on known records, inserts by id)."""
    steps: list[Step] = []
    # Entries the store has not seen, grouped by the code they carry on their page: the
    # highest speedup (then the older exp id) is the record, the others its reproductions.
    fresh: dict[tuple, list[tuple[reader.Entry, dict]]] = {}
    for entry, record in read:
        if record["id"] in view:
            steps.extend(_known(view, entry, record, report))
            continue
        signature = content_signature(record)
        group = (signature, _page(record)) if signature else (record["id"],)
        fresh.setdefault(group, []).append((entry, record))
    inserts: dict[str, Step] = {}
    for members in fresh.values():
        members.sort(key=_best_first)
        holder_id, counted = _twin_in_store(view, members[0][1])
        rest = members
        if holder_id is None:
            entry, record = members[0]
            records = _gated(store, entry, record, report)
            if not records or records[0] is not record:
                continue
            for kept in records:
                events = mapper.ledger_events(entry, kept) if kept is record else []
                step = Step("insert", kept["id"], [entry.where], _insert_detail(entry, kept),
                            events=events, record=kept)  # fmt: skip
                inserts[kept["id"]] = step
            holder_id, rest = record["id"], members[1:]
        for entry, _record in rest:
            keys = [k for k in mapper.measurement_keys(entry, first=1) if k not in counted]
            if not keys:
                continue
            steps.append(Step("confirm", holder_id, [entry.where],
                              f"same code as {holder_id} at {entry.speedup!r}x: a reproduction",
                              keys=keys))  # fmt: skip
    return steps, inserts


def _insert_detail(entry: reader.Entry, record: dict) -> str:
    if record["type"] != "strategy":
        return f"{record['type']} from the entry's dead ends"
    status = " (retired in GEAK: imported retracted)" if record["status"] == "deprecated" else ""
    return f"{entry.speedup!r}x on {entry.gfx} {entry.language} {entry.kernel}{status}"


def _known(view: StoreView, entry: reader.Entry, record: dict, report: ImportReport) -> list[Step]:
    """What changed in GEAK since the entry's record was imported."""
    held = view.read_record(record["id"])
    if held.data is None:
        raise GitkbError(f"{record['id']} is unreadable ({held.error}); nothing imported")
    existing, steps = held.data, []
    counted = set(array(rec.dig(existing, "worth", "track", "confirm_keys")))
    keys = [k for k in mapper.measurement_keys(entry) if k not in counted]
    stated = rec.dig(existing, "retrieval", "signals", "metrics", "speedup_x")
    if stated != entry.speedup:
        key = f"geak:{entry.where}@{entry.speedup!r}"
        if key not in counted:
            keys.append(key)
    if keys:
        what = f"{len(keys)} new measurement(s) of its code"
        if stated != entry.speedup:
            what += f"; re-measured at {entry.speedup!r}x (the record keeps {stated!r}x)"
        steps.append(Step("confirm", record["id"], [entry.where], what, keys=keys))
    lpath = ledger_path(record["id"])
    ledger = parse_ledger(lpath, view.read_files([lpath]).get(lpath))
    events = mapper.attest_events(entry, ledger)
    if events:
        steps.append(Step("attest", record["id"], [entry.where],
                          f"{len(events)} attestation line(s) GEAK counted since",
                          events=events, entry=entry))  # fmt: skip
    retracted = existing.get("status") in RETIRED_STATUSES
    if mapper.retired(entry.meta) and not retracted:
        steps.append(Step("retract", record["id"], [entry.where], mapper.retired_reason(entry)))
    elif retracted and not mapper.retired(entry.meta):
        report.notes.append({"entry": entry.where, "note": f"GEAK serves it again; {record['id']} "
                             "stays retracted until git kb unretract lifts it"})  # fmt: skip
    return steps


def _import_change(root_name: str, inserts: list[Step], report: ImportReport) -> Builder:
    from gitkb.store.writer import Change

    def build(view: StoreView) -> Change:
        edits: dict[str, bytes | None] = {}
        for step in inserts:
            if step.record_id in view:
                continue  # a concurrent import landed it
            edits[rec.path_for(step.record)] = rec.dumps(step.record)
            if step.events:
                lpath = ledger_path(step.record_id)
                ledger = parse_ledger(lpath, view.read_files([lpath]).get(lpath))
                edits[lpath] = appended(ledger, False, *step.events)
        if not edits:
            return Change("import", f"geak:{root_name}", {}, note="nothing new to import")
        return Change(
            "import",
            f"geak:{root_name}",
            edits,
            body=f"Imported {len(inserts)} GEAK records; {len(report.skipped)} entries "
            "not importable.",
            trailers=[
                ("KB-Source", "geak"),
                ("KB-Records", str(len(inserts))),
                ("KB-Skipped", str(len(report.skipped))),
            ],
        )

    return build


def _confirm_change(record_id: str, keys: list[str], entries: list[str]) -> Builder:
    def build(view: StoreView) -> Change:
        return confirm_change(
            view,
            record_id,
            keys,
            f"GEAK measured this code again: {', '.join(entries)}.",
            [("KB-Source", "geak"), ("KB-Confirmed-By", entries[0])],
        )

    return build


def _attest_change(step: Step) -> Builder:
    from gitkb.store.writer import Change

    def build(view: StoreView) -> Change:
        lpath = ledger_path(step.record_id)
        ledger = parse_ledger(lpath, view.read_files([lpath]).get(lpath))
        new = mapper.attest_events(step.entry, ledger)
        if not new:
            return Change("attest", step.record_id, {}, lpath, note="already attested, skipped")
        return Change(
            "attest",
            step.record_id,
            {lpath: appended(ledger, False, *new)},
            path=lpath,
            body=f"GEAK attestations of {step.entries[0]}: {step.detail}.",
            trailers=[("KB-Source", "geak"), ("KB-By", _BY)],
        )

    return build


def _retract_change(step: Step) -> Builder:
    from gitkb.store.writer import Change
    from gitkb.warmstart.retract import retraction

    def build(view: StoreView) -> Change:
        entry = view.entry(step.record_id) or {}
        if entry.get("status") in RETIRED_STATUSES:
            return Change("retract", step.record_id, {}, note="already retracted, skipped")
        return retraction(view, step.record_id, step.detail, _BY)

    return build


def import_tree(store: Store, folder: str | os.PathLike, dry_run: bool = False) -> ImportReport:
    """Bring the store up to the GEAK tree at ``folder`` (see the module text); with
    ``dry_run``, only the plan (``report.steps``)."""
    report, steps = plan(store, folder)
    report.dry_run = dry_run
    if dry_run or not steps:
        return report
    inserts = [s for s in steps if s.action == "insert"]
    builds = [_import_change(reader.store_root(folder).name, inserts, report)] if inserts else []
    confirms: dict[str, Step] = {}
    for step in steps:
        if step.action == "confirm":
            merged = confirms.setdefault(step.record_id, Step("confirm", step.record_id, [], ""))
            merged.keys += step.keys
            merged.entries += step.entries
    builds += [_confirm_change(s.record_id, s.keys, s.entries) for s in confirms.values()]
    builds += [_attest_change(s) for s in steps if s.action == "attest"]
    builds += [_retract_change(s) for s in steps if s.action == "retract"]
    admissions = store.commit(builds)
    report.reproductions = [{"entry": e, "record": s.record_id}
                            for s in steps if s.action == "confirm" for e in s.entries]  # fmt: skip
    report.commit = next((a.commit for a in reversed(admissions) if a.commit), None)
    report.commits = [a.commit for a in admissions if a.commit]
    return report
