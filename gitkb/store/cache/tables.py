"""Writing files into the index cache's tables: each file's bytes (``files``), and a
record file's row, entry, kernel names and architectures (``gitkb.store.cache.rows``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping

from gitkb import record as rec
from gitkb.store.cache.file import pack
from gitkb.store.cache.rows import (
    ENTRY_AT,
    KERNEL_COLUMNS,
    RECORD_COLUMNS,
    RECORD_WIDTH,
    RowValues,
    kernel_entries,
    row_values,
)

# a kernels row: the name, then a KernelRow's columns (``kernel_entries``)
_KERNEL_INSERT = (f"INSERT OR REPLACE INTO kernels (name, {', '.join(KERNEL_COLUMNS)}) "
                  f"VALUES ({', '.join('?' * (1 + len(KERNEL_COLUMNS)))})")  # fmt: skip


def delete(db: sqlite3.Connection, paths: list[str]) -> None:
    """Drop the files at ``paths``, and the rows of the records among them."""
    pairs = [(p,) for p in paths]
    db.executemany("DELETE FROM files WHERE path = ?", pairs)
    records = [pair for pair in pairs if rec.is_record_path(pair[0])]
    db.executemany("DELETE FROM records WHERE path = ?", records)
    db.executemany("DELETE FROM entries WHERE path = ?", records)
    db.executemany("DELETE FROM kernels WHERE path = ?", records)
    db.executemany("DELETE FROM arches WHERE path = ?", records)


def put(
    db: sqlite3.Connection,
    files: Iterable[tuple[str, str, bytes | None]],
    parsed: Mapping[str, dict] | None = None,
    deflated: Callable[[str], bytes | None] | None = None,
    ahead: Mapping[str, RowValues] | None = None,
) -> None:
    """Store files (path, blob sha, bytes; None: the object cannot be read from a damaged
    repository, kept as a record that does not read); ``parsed``: records the caller
    already parsed from those bytes; ``deflated``: a blob's bytes in the zlib form the
    cache keeps, where the caller has them already (None: deflate here); ``ahead``:
    rows already worked out (``row_values``), taken where their blob is the file's."""
    rows, entries, kernels, arches, stored = [], [], [], [], []
    for path, blob, raw in files:
        packed = None if raw is None else (deflated and deflated(blob)) or pack(raw)
        stored.append((path, blob, packed))
        if rec.is_record_path(path):
            known = ahead.get(path) if ahead else None
            if known is not None and known[0][1] == blob:
                values, names, archs = known
            else:
                data = parsed.get(path) if parsed else None
                values, names, archs = row_values(path, blob, raw, data)
            rows.append(values[:ENTRY_AT] + values[ENTRY_AT + 1 :])
            if values[ENTRY_AT] is not None:
                entries.append((path, values[ENTRY_AT]))
            kernels += kernel_entries(values, names)
            arches += [(arch, path) for arch in archs]
    db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?)", stored)
    marks = ", ".join("?" * RECORD_WIDTH)
    insert = f"INTO records ({RECORD_COLUMNS}) VALUES ({marks})"
    added = db.executemany(f"INSERT OR IGNORE {insert}", rows)
    if added.rowcount != len(rows):
        # A path held a record already (new paths are the common case, and cost one
        # statement): records replace by path, a replaced one's names, arches and
        # entry first.
        replaced = [(values[0],) for values in rows]
        db.executemany("DELETE FROM kernels WHERE path = ?", replaced)
        db.executemany("DELETE FROM arches WHERE path = ?", replaced)
        db.executemany("DELETE FROM entries WHERE path = ?", replaced)
        db.executemany(f"INSERT OR REPLACE {insert}", rows)
    db.executemany("INSERT INTO entries VALUES (?, ?)", entries)
    db.executemany(_KERNEL_INSERT, kernels)
    db.executemany("INSERT INTO arches VALUES (?, ?)", arches)
