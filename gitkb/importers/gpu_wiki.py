"""GPU-wiki records trees: records keep their paths and bytes (the store does the work)."""

from __future__ import annotations

from gitkb.importers import ImportReport


def import_tree(store, folder) -> ImportReport:
    admission = store.import_gpu_wiki(folder)
    records = dict(store.repo.commit(admission.commit).trailers).get("KB-Records", "0")
    return ImportReport("gpu-wiki", admission.commit, imported=int(records))
