"""GPU-wiki records trees, both ways: records keep their paths and bytes.

Import admits a tree (``<folder>/records/...``) in one ``import`` commit after the
record gates pass on every record; export writes every record, byte for byte at its
path, and the ``records/index.json`` GPU-wiki readers expect (a store keeps its
index as a cache, store format 2, so export is where the file is made).
"""

from __future__ import annotations

import os
from pathlib import Path

from gitkb import record as rec
from gitkb.errors import AdmissionRefused, GitkbError, RecordError, writing
from gitkb.gates import GateContext, run_gates
from gitkb.gates.registry import record_level
from gitkb.importers import ImportReport
from gitkb.record.index import INDEX_PATH
from gitkb.server.history import bad_name
from gitkb.store import Store
from gitkb.store.admission import gates_figure, refuse_findings
from gitkb.store.view import StoreView
from gitkb.store.writer import Change
from gitkb.util import log
from gitkb.util.files import atomic_write

logger = log.logger("gitkb")


def linked_paths(folder: str | os.PathLike) -> list[str]:
    """Symlinks under ``<folder>/records`` (files and folders): an import never follows one."""
    found = []
    for top, dirs, names in os.walk(Path(folder) / rec.RECORDS_DIR):
        for name in sorted(dirs + names):
            if os.path.islink(os.path.join(top, name)):
                found.append(Path(top, name).relative_to(folder).as_posix())
    return found


def import_tree(store: Store, folder: str | os.PathLike, dry_run: bool = False) -> ImportReport:
    linked = linked_paths(folder)
    if linked:
        raise RecordError(
            f"{folder}: {linked[0]} is a symlink ({len(linked)} in the tree); an import never "
            "follows one: replace it with the file it points to"
        )
    files = rec.read_folder(folder)
    if not files:
        raise RecordError(f"{folder}: no record files under records/")
    name = Path(folder).resolve().name

    def build(view: StoreView) -> Change:
        clashes = [f.id for f in files if f.id in view]
        if clashes:
            raise AdmissionRefused(
                f"import refused: {len(clashes)} ids already in the store, e.g. {clashes[0]}"
            )
        results = run_gates(GateContext(records=files, store=view), record_level())
        findings = [f for r in results for f in r.findings]
        if findings:
            raise refuse_findings(f"{folder}: import", findings)
        return Change(
            "import",
            f"gpu-wiki:{name}",
            {f.path: f.raw for f in files},
            body=f"Imported {len(files)} GPU-wiki records.",
            trailers=[
                ("KB-Source", "gpu-wiki"),
                ("KB-Records", str(len(files))),
                ("KB-Gates", gates_figure(results)),
            ],
        )

    # one import step a record, planned or done (the report says what a sync did alike)
    steps = [{"action": "import", "record": f.id, "entries": [f.path], "detail": ""}
             for f in files]  # fmt: skip
    if dry_run:
        return ImportReport("gpu-wiki", None, imported=len(files), steps=steps, dry_run=True)
    [admission] = store.commit([build])
    return ImportReport("gpu-wiki", admission.commit, imported=len(files), steps=steps,
                        commits=[admission.commit])  # fmt: skip


def export_tree(store: Store, folder: str | os.PathLike) -> int:
    """Write every record at its path and the index under ``folder``; the record count."""
    out = Path(folder)
    if (out / rec.RECORDS_DIR).exists() and any((out / rec.RECORDS_DIR).iterdir()):
        raise GitkbError(
            f"{out / rec.RECORDS_DIR} exists and is not empty; export into a new folder"
        )
    tip = store.tip
    count = 0
    with writing(out):
        for record_file in store.record_files(tip):
            problem = bad_name(record_file.path)
            if not record_file.raw and record_file.data is None:
                problem = record_file.error  # its object cannot be read: nothing to write
            if problem:
                # An entry from before the history rules (``..``, ``.git``): never followed.
                logger.warning("not exported: %r (%s)", record_file.path, problem)
                continue
            atomic_write(out / record_file.path, record_file.raw)
            count += 1
        atomic_write(out / INDEX_PATH, store.index_file(tip))
    return count
