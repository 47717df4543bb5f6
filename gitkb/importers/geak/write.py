"""Importing a GEAK tree: read, map, gate, then one ``import`` commit through the store's
write path (``store.commit`` with a ``Change``).

Entries whose code is already on their page (same content signature, same
product and language: GEAK's rule) are reproductions: they confirm the record
holding the code, counting as many measurements as the entry says. What cannot
become a valid record is listed with the reason; an entry filed under one gfx
but measured on another is noted, and lands on the page it was measured on.
"""

from __future__ import annotations

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.importers import ImportReport
from gitkb.importers.geak import mapper, reader
from gitkb.layout import ledger_path
from gitkb.warmstart.attest import appended, parse_ledger
from gitkb.warmstart.curate import page_of


def _page(record: dict) -> tuple:
    """The GEAK page a record is on: product (measured) and language."""
    scope = rec.scope_of(record)
    measured = rec.dig(record, "evidence", "summary", "measured_on", "gpu")
    product = scope.get("product") if isinstance(scope.get("product"), str) else None
    return (
        scope.get("vendor"),
        page_of(product, measured if isinstance(measured, str) else None),
        rec.language_of(record),
    )


def prepare(store, root, report: ImportReport) -> list[tuple]:
    """(entry, record, ledger events) of every entry that maps to a gate-valid record; the
    rest go to ``report.skipped`` with the reason."""
    prepared = []
    for folder in reader.entries(root):
        where = folder.relative_to(root).as_posix()
        try:
            entry = reader.read_entry(folder, root)
        except reader.Skip as exc:
            report.skipped.append({"entry": where, "reason": str(exc)})
            continue
        if entry.filed_gfx != entry.gfx:
            report.notes.append(
                {
                    "entry": where,
                    "note": f"filed under {entry.filed_gfx} but measured on {entry.gfx} "
                    f"(metric.gpu_arch): imported on the {entry.gfx} page",
                }
            )
        main = mapper.strategy(entry)
        for record in [main, *mapper.anti_strategies(entry, main)]:
            _, findings = store.check_record(record, rec.path_for(record))
            if findings:
                reason = "; ".join(f"{f.gate}: {f.message}" for f in findings[:3])
                report.skipped.append({"entry": f"{where} ({record['type']})", "reason": reason})
                continue
            events = mapper.ledger_events(entry, record) if record is main else []
            prepared.append((entry, record, events))
    return prepared


def import_tree(store, folder) -> ImportReport:
    from gitkb.record.signature import content_signature
    from gitkb.store.admission import count_confirmation, reproduction_of
    from gitkb.store.writer import Change

    root = reader.store_root(folder)
    report = ImportReport("geak", None)
    prepared = prepare(store, root, report)
    if not prepared and not report.skipped:
        raise GitkbError(f"{folder}: no GEAK entries (<gfx>/<kernel_class>/<slug>/<exp_id>/meta.*)")

    def build(view):
        report.imported, report.reproductions = 0, []
        edits: dict[str, bytes | None] = {}
        pending: dict[str, tuple[str, dict]] = {}  # id -> (path, record) written by this import
        holders: dict[tuple, str] = {}  # (signature, type, page, kernel) -> id, this import

        def holder(record_id):
            if record_id in pending:
                return pending[record_id]
            loaded = view.read_record(record_id)
            if loaded.data is None:
                raise GitkbError(f"{record_id} is unreadable ({loaded.error}); nothing imported")
            return loaded.path, loaded.data

        for entry, record, events in prepared:
            if record["id"] in view or record["id"] in pending:
                continue  # imported before
            signature = content_signature(record)
            page = (signature, record["type"], _page(record), entry.kernel)
            twin = holders.get(page) if signature else None
            if twin is None and signature:
                found = reproduction_of(view, record)
                if found is not None and _page(holder(found)[1]) == page[2]:
                    twin = found
            if twin is not None:
                path, existing = holder(twin)
                measurements = reader.count(entry.meta.get("reproductions"), 1) or 1
                counted = [
                    count_confirmation(existing, f"geak:{entry.where}#{n}")
                    for n in range(1, measurements + 1)
                ]
                if any(c is not None for c in counted):
                    pending[twin] = (path, existing)
                    edits[path] = rec.dumps(existing)
                    report.reproductions.append({"entry": entry.where, "record": twin})
                continue
            path = rec.path_for(record)
            if signature:
                holders[page] = record["id"]
            pending[record["id"]] = (path, record)
            edits[path] = rec.dumps(record)
            report.imported += 1
            if events:
                lpath = ledger_path(record["id"])
                ledger = parse_ledger(lpath, view.read_files([lpath]).get(lpath))
                edits[lpath] = appended(ledger, False, *events)
        if not edits:
            return Change("import", f"geak:{root.name}", {}, note="nothing new to import")
        return Change(
            "import",
            f"geak:{root.name}",
            edits,
            body=f"Imported {report.imported} GEAK records; {len(report.reproductions)} "
            f"reproductions confirmed; {len(report.skipped)} entries not importable.",
            trailers=[
                ("KB-Source", "geak"),
                ("KB-Records", str(report.imported)),
                ("KB-Reproductions", str(len(report.reproductions))),
                ("KB-Skipped", str(len(report.skipped))),
            ],
        )

    report.commit = store.commit([build])[0].commit
    return report
