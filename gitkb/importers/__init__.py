"""Importers: another tool's experience store -> admissions of this store.

One module per kind, one line in IMPORTERS. Each module defines
``import_tree(store, folder) -> ImportReport``; it writes through the store's
one writing mechanism and lists what it could not import, with the reason.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from gitkb.store.store import Store

# kind -> module under gitkb.importers
IMPORTERS = {
    "gpu-wiki": "gpu_wiki",
    "geak": "geak",
    "tlx-knowledge": "tlx_entries",
}


@dataclass
class ImportReport:
    kind: str
    commit: str | None
    imported: int = 0
    reproductions: list[dict] = field(default_factory=list)  # {"entry", "record"}
    skipped: list[dict] = field(default_factory=list)  # {"entry", "reason"}
    notes: list[dict] = field(default_factory=list)  # {"entry", "note"}: imported, with a remark
    steps: list[dict] = field(default_factory=list)  # a sync's plan: {"action", "record", ...}
    commits: list[str] = field(default_factory=list)  # every commit the import wrote
    dry_run: bool = False

    def as_json(self) -> dict:
        return dict(self.__dict__)


@runtime_checkable
class ImporterModule(Protocol):
    """What a module named in ``IMPORTERS`` holds (tests/unit/test_plugins.py checks each)."""

    def import_tree(self, store: Store, folder: Path, dry_run: bool = False) -> ImportReport: ...


def import_tree(
    kind: str, store: Store, folder: str | os.PathLike, dry_run: bool = False
) -> ImportReport:
    module = importlib.import_module(f"gitkb.importers.{IMPORTERS[kind]}")
    return module.import_tree(store, folder, dry_run=dry_run)
