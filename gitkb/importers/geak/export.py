"""``git kb export geak DIR``: the store's code records as a GEAK ``kb_artifacts`` tree.

Every strategy that carries a unified diff on a gfx page, whether imported from
GEAK or mined here, becomes ``DIR/kb_artifacts/<gfx>/<kernel_class>/<slug>/<exp_id>/``
with ``meta.yaml`` (identity, the speedup at full precision, bench key, direction,
reproductions, attestation counts from the ledger; a retracted record as
``retained: false`` with its reason), ``patch.diff`` and ``report.md``. An entry
imported from GEAK goes back where it came from; a mined one is filed under its
page, kernel family and a stable exp id. GEAK's own ``resolve`` on the tree
answers as ``git kb resolve --format geak`` does on the store.
"""

from __future__ import annotations

import os
from pathlib import Path

from gitkb import record as rec
from gitkb.errors import GitkbError, writing
from gitkb.layout import ledger_path
from gitkb.store import Store
from gitkb.util.files import atomic_write
from gitkb.warmstart import curate, geak
from gitkb.warmstart.attest import Ledger, parse_ledger


def _candidate(
    record: dict, path: str, ledger_raw: bytes | None
) -> tuple[curate.CodeRecord, Ledger]:
    """The record as resolve sees it (speedup, counts from its ledger), and its ledger."""
    ledger = parse_ledger(ledger_path(record["id"]), ledger_raw)
    scope = rec.scope_of(record)
    product = scope.get("product") if isinstance(scope.get("product"), str) else None
    retired = record.get("status") in curate.RETIRED_STATUSES
    language = rec.language_of(record) or curate.ANY_LANGUAGE
    found = curate.code_record(record, path, retired, ledger.counts(),
                                curate.page_of(product, None), language)  # fmt: skip
    return found, ledger


def export_tree(store: Store, folder: str | os.PathLike) -> dict:
    """Write the tree under ``folder``/kb_artifacts; what was written and what was not."""
    out = Path(folder) / "kb_artifacts"
    if out.exists() and any(out.iterdir()):
        raise GitkbError(f"{out} exists and is not empty; export into a new folder")
    view = store.view()
    rows = [r for r in view.scoped_rows(type="strategy") if r.id is not None]
    blobs = view.read_files([r.path for r in rows] + [ledger_path(r.id) for r in rows])
    written, left = 0, dict[str, int]()
    with writing(out):
        for row in rows:
            loaded = rec.load(row.path, blobs[row.path]) if row.path in blobs else None
            if loaded is None or loaded.data is None:
                left["unreadable"] = left.get("unreadable", 0) + 1
                continue
            candidate, ledger = _candidate(loaded.data, row.path, blobs.get(ledger_path(row.id)))
            retraction = ledger.open_retraction()
            found = geak.files_of(candidate, (retraction or {}).get("reason"))
            if found is None:
                left["no_geak_entry"] = left.get("no_geak_entry", 0) + 1
                continue
            where, files = found
            if (out / where).exists():
                left["same_entry_twice"] = left.get("same_entry_twice", 0) + 1
                continue
            for name, data in files.items():
                atomic_write(out / where / name, data)
            written += 1
    return {"written": written, "root": str(out), "not_written": left}
