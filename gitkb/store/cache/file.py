"""The index cache's SQLite file: its tables, its layout version, and opening it.

A file of another layout version, or one SQLite cannot read, fails to open here
(``sqlite3.DatabaseError``); ``gitkb.store.cache.index_cache`` then removes it and makes it anew,
or keeps the cache in memory where the folder cannot be written.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import zlib

from gitkb.store.cache.rows import KERNEL_COLUMNS
from gitkb.trace.vocabulary_version import digest as vocabulary_digest

FILE_NAME = "index.sqlite3"
LAYOUT_VERSION = "13"  # bump when the tables, or what a row or an entry holds, change
_BUSY_TIMEOUT_MS = 120_000
_MMAP_BYTES = 1 << 30
# worth.rank.score as ranking reads it: a number in [0, 1], 0 when missing (records_rank
# is ordered by it: gitkb.store.cache.queries reads a large pool from its most important end).
IMPORTANCE = "(CASE WHEN worth > 1 THEN 1.0 WHEN worth >= 0 THEN worth ELSE 0.0 END)"

_KERNEL_COLUMNS = ", ".join(KERNEL_COLUMNS)
_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, blob TEXT NOT NULL, raw BLOB);
CREATE TABLE IF NOT EXISTS records (
    path TEXT PRIMARY KEY,
    blob TEXT NOT NULL,
    id TEXT,
    type TEXT,
    status TEXT,
    episode_key TEXT,
    vendor TEXT,
    arch TEXT,
    dsl TEXT,
    family TEXT,
    product TEXT,
    measured TEXT,
    language TEXT,
    signature TEXT,
    source TEXT,
    level TEXT,
    tier TEXT,
    worth REAL,
    gain REAL,
    speedup REAL,
    architectures TEXT,
    operators TEXT,
    symptoms TEXT,
    bottleneck TEXT,
    tags TEXT,
    technique TEXT,
    techniques TEXT,
    search_text TEXT,
    code TEXT,
    code_speedup REAL,
    bench_key TEXT,
    direction TEXT,
    reproductions REAL,
    exp_id TEXT,
    geak_gfx TEXT,
    geak_kernel TEXT,
    rocm TEXT,
    error TEXT
);
-- a record's GPU-wiki index entry, apart: a scan of the columns above reads no entry
CREATE TABLE IF NOT EXISTS entries (path TEXT PRIMARY KEY, entry TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_id ON records(id);
CREATE INDEX IF NOT EXISTS records_signature ON records(signature);
CREATE INDEX IF NOT EXISTS records_scope ON records(vendor, arch, family);
CREATE INDEX IF NOT EXISTS records_episode ON records(episode_key);
CREATE INDEX IF NOT EXISTS records_source ON records(source);
-- a record's KernelRow under each name it files code under, clustered by name: resolve
-- reads a kernel's rows as one run of this table, not one records row per path (its
-- columns are the records table's, as a KernelRow reads them: ``rows.KERNEL_COLUMNS``)
CREATE TABLE IF NOT EXISTS kernels (name TEXT NOT NULL, {kernel_columns},
    PRIMARY KEY (name, path)) WITHOUT ROWID;
-- the names alone (resolve's list of kernels reads this, not the rows)
CREATE INDEX IF NOT EXISTS kernels_name ON kernels(name);
CREATE INDEX IF NOT EXISTS kernels_path ON kernels(path);
CREATE INDEX IF NOT EXISTS records_dsl ON records(dsl);
CREATE INDEX IF NOT EXISTS records_type ON records(type);
CREATE INDEX IF NOT EXISTS records_family ON records(family);
CREATE INDEX IF NOT EXISTS records_arch ON records(arch);
CREATE INDEX IF NOT EXISTS records_technique ON records(technique);
-- a scope's count over the whole store reads this, not the table (ids and statuses only)
CREATE INDEX IF NOT EXISTS records_status ON records(status, id);
-- ranking's order, and the scope columns a walk in that order tests without the table
CREATE INDEX IF NOT EXISTS records_rank ON records({importance} DESC, id, path, vendor, arch,
    dsl, family, type, status);
CREATE TABLE IF NOT EXISTS arches (arch TEXT NOT NULL, path TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS arches_arch ON arches(arch);
CREATE INDEX IF NOT EXISTS arches_path ON arches(path);
"""
# One script, one transaction: two processes creating the cache at once both succeed.
_CREATE = (
    f"BEGIN IMMEDIATE;{_TABLES.format(importance=IMPORTANCE, kernel_columns=_KERNEL_COLUMNS)}"
    "INSERT OR IGNORE INTO meta VALUES ('layout', '{}');COMMIT;"
)


def layout() -> str:
    """The layout a cache file must have: the tables' version and the technique
    vocabulary file's digest (every row's ``technique`` is derived under it, so a changed
    vocabulary rebuilds the cache as a new layout does)."""
    return f"{LAYOUT_VERSION}+techniques-{vocabulary_digest()}"


def open_file(path: str) -> sqlite3.Connection:
    """The cache file at ``path``, made with its tables when new; raises
    ``sqlite3.DatabaseError`` (or ``OSError``) for one that cannot serve."""
    if not os.path.exists(path):
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.dirname(path))
    db = sqlite3.connect(path, isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000)
    try:
        db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        # Pages read through a memory map: a query's scan of the records table costs
        # no system call per page (a fresh process has an empty page cache).
        db.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
        wanted = layout()
        if not db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
            db.executescript(_CREATE.format(wanted))
        held = db.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
        if held is None or held[0] != wanted:
            found = held and held[0]
            raise sqlite3.DatabaseError(f"layout {found!r}, not {wanted}")
    except BaseException:
        db.close()
        raise
    return db


def open_memory() -> sqlite3.Connection:
    """A cache kept in memory, with its tables (a git directory that cannot be written)."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(_CREATE.format(layout()))
    return db


def close_quietly(db: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        db.close()


def read_only(exc: BaseException) -> bool:
    """Whether ``exc`` says the cache file or its folder cannot be written."""
    text = str(exc).lower()
    return (
        "readonly" in text
        or "read-only" in text
        or "unable to open" in text
        or isinstance(exc, PermissionError)
    )


def pack(raw: bytes) -> bytes:
    """A file's bytes as the cache keeps them: a zlib stream, as git's packs hold blobs."""
    return zlib.compress(raw, 1)


def unpack(packed: bytes | None) -> bytes | None:
    try:
        return zlib.decompress(packed) if packed is not None else None
    except (zlib.error, TypeError):
        return None
