"""The index cache: a store's index entries in SQLite under the git directory.

Like git's own commit-graph, the index is derived data and stays out of history
(store format 2). The cache says which ``records/`` tree it describes; moving it
to another tree applies the tree diff between the two, so its cost follows the
change. It is rebuilt from the records when missing, unreadable, of another
layout version, or found lying (a row whose blob is not the one the tree holds
at that path, see ``Store``): never trusted without a check. A git directory
that cannot be written gets a cache in memory instead.

Every use runs inside ``snapshot(tree)``: one SQLite transaction holding the
cache at that tree, so a reader never sees another process move it midway.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.record.index import index_entry
from gitkb.record.signature import content_signature
from gitkb.store.layout import CACHE_DIR

log = logging.getLogger("gitkb")

FILE_NAME = "index.sqlite3"
LAYOUT_VERSION = "1"  # bump when the tables or what an entry holds change
_BUSY_TIMEOUT_MS = 120_000
_NO_TREE = ""  # the cache of a commit without a records/ folder

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
    signature TEXT,
    source TEXT,
    entry TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS records_id ON records(id);
CREATE INDEX IF NOT EXISTS records_signature ON records(signature);
CREATE INDEX IF NOT EXISTS records_scope ON records(vendor, arch, family);
CREATE INDEX IF NOT EXISTS records_episode ON records(episode_key);
CREATE INDEX IF NOT EXISTS records_source ON records(source);
CREATE TABLE IF NOT EXISTS kernels (name TEXT NOT NULL, path TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS kernels_name ON kernels(name);
CREATE INDEX IF NOT EXISTS kernels_path ON kernels(path);
"""
# One script, one transaction: two processes creating the cache at once both succeed.
_CREATE = f"BEGIN IMMEDIATE;{_TABLES}INSERT OR IGNORE INTO meta VALUES ('layout', '{{}}');COMMIT;"
_COLUMNS = (
    "path, blob, id, type, status, episode_key, vendor, arch, dsl, family, signature, source, "
    "entry, error"
)


@dataclass(frozen=True)
class Row:
    """One record file as the cache knows it; ``entry`` is None when it does not parse."""

    path: str
    blob: str
    id: str | None
    entry: dict | None
    error: str | None
    source: str | None = None  # evidence.raw.source_repo: the trace it was mined from


def kernel_names(record: dict) -> list[str]:
    """The names a record files code under: its scope's operators, else its family."""
    scope = rec.scope_of(record)
    listed = scope.get("operators")
    names = (
        [o for o in listed if isinstance(o, str) and o.strip()] if isinstance(listed, list) else []
    )
    family = scope.get("operator_family")
    return names or ([family] if isinstance(family, str) and family.strip() else [])


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _row_values(path: str, blob: str, raw: bytes) -> tuple[tuple, list[str]]:
    """The ``records`` row of one record file and its kernel names."""
    loaded = rec.load(path, raw)
    data = loaded.data
    if data is None:
        # Filed under its family's folder all the same, so a reader of that kernel sees
        # (and counts) the broken record.
        parts = path.split("/")
        return (path, blob, *([None] * 11), loaded.error), parts[5:6] if len(parts) == 7 else []
    scope = rec.scope_of(data)
    entry = index_entry(data, path)
    values = (
        path,
        blob,
        _text(data.get("id")),
        _text(data.get("type")),
        _text(data.get("status")),
        _text(data.get("episode_key")),
        _text(scope.get("vendor")),
        _text(scope.get("arch")),
        _text(scope.get("dsl")),
        _text(scope.get("operator_family")),
        content_signature(data),
        _text(rec.dig(data, "evidence", "raw", "source_repo")),
        json.dumps(entry, ensure_ascii=False),
        None,
    )
    return values, kernel_names(data)


class IndexCache:
    """The index entries of one repository's records, at one tree at a time."""

    def __init__(self, repo, path: Path | None) -> None:
        self.repo = repo
        self.path = path  # None: in memory
        self._db: sqlite3.Connection | None = None
        self._depth = 0  # nesting of snapshot()
        self._tree: str | None = None  # the tree the open transaction holds
        self._dirty = False  # edits applied in the open transaction from objects in memory

    @classmethod
    def open(cls, repo) -> IndexCache:
        return cls(repo, repo.git_dir / CACHE_DIR / FILE_NAME)

    # ----------------------------------------------------------------- connection

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        if self.path is not None:
            try:
                self._db = self._open_file(self.path)
                return self._db
            except (sqlite3.DatabaseError, OSError) as exc:
                if self.path.exists() and not _read_only(exc):
                    log.info("the index cache %s was unusable (%s); rebuilding it", self.path, exc)
                    self._remove_files()
                    with contextlib.suppress(sqlite3.DatabaseError, OSError):
                        self._db = self._open_file(self.path)
                        return self._db
                log.info("the index cache cannot be kept in %s; keeping it in memory", self.path)
                self.path = None  # an unwritable git directory
        self._db = sqlite3.connect(":memory:", isolation_level=None)
        self._db.executescript(_CREATE.format(LAYOUT_VERSION))
        return self._db

    @staticmethod
    def _open_file(path: Path) -> sqlite3.Connection:
        path.parent.mkdir(exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000)
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            if not db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
                db.executescript(_CREATE.format(LAYOUT_VERSION))
            layout = db.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
            if layout is None or layout[0] != LAYOUT_VERSION:
                raise sqlite3.DatabaseError(
                    f"layout {layout and layout[0]!r}, not {LAYOUT_VERSION}"
                )
        except BaseException:
            db.close()
            raise
        return db

    def _remove_files(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        if self.path is not None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # ----------------------------------------------------------------- snapshots

    @contextlib.contextmanager
    def snapshot(self, tree: str | None, keep: bool = True) -> Iterator[IndexCache]:
        """Hold the cache at records tree ``tree`` (None: no records) for the block. The
        outermost block owns one transaction: committed at the end when ``keep``, rolled
        back otherwise (a pre-receive check leaves the cache where it was). Nested blocks
        move the cache inside that transaction."""
        tree = tree or _NO_TREE
        if self._depth:
            self._depth += 1
            try:
                self._move(tree)
                yield self
            finally:
                self._depth -= 1
            return
        self._begin(tree)
        self._depth = 1
        ok = False
        try:
            yield self
            ok = True
        finally:
            self._depth = 0
            self._end(ok and keep)

    def _begin(self, tree: str) -> None:
        for attempt in (1, 2):
            db = self._connect()
            try:
                db.execute("BEGIN IMMEDIATE")
                self._tree = self._meta("tree")
                self._dirty = False
                self._move(tree)
                if not self._sample_agrees():
                    log.info("the index cache %s disagreed with the records; rebuilding it",
                             self.path)  # fmt: skip
                    self._rebuild(tree)
                return
            except sqlite3.OperationalError as exc:
                if _read_only(exc) and self.path is not None:
                    log.info("the index cache %s is read-only (%s); keeping one in memory",
                             self.path, exc)  # fmt: skip
                    self._remove_connection()
                    self.path = None
                    continue
                raise GitkbError(f"the index cache {self.path} cannot be used ({exc})") from None
            except sqlite3.DatabaseError as exc:
                if attempt == 2:
                    raise GitkbError(f"the index cache cannot be rebuilt ({exc})") from None
                log.info("the index cache %s was unreadable (%s); rebuilding it", self.path, exc)
                self._remove_files()

    def _sample_agrees(self, size: int = 3) -> bool:
        """A few rows, picked at random, checked against the tree: a cache edited or copied
        from another store is caught here or when a row is used (``Store``)."""
        if not self._tree:
            return True
        last = self._db.execute("SELECT max(rowid) FROM records").fetchone()[0]
        if not last:
            return True
        picks = self._db.execute(
            "SELECT path, blob FROM records WHERE rowid >= abs(random()) % ? LIMIT ?",
            (last, size),
        ).fetchall()
        prefix = rec.RECORDS_DIR + "/"
        return all(
            self.repo.blob_in_tree(self._tree, path.removeprefix(prefix)) == blob
            for path, blob in picks
        )

    def rebuild(self) -> None:
        """Rebuild the open snapshot's tree from the records (the caller found a lie)."""
        if self._dirty:
            raise GitkbError("internal: the index cache cannot be rebuilt under unwritten edits")
        log.info("the index cache %s disagreed with the records; rebuilding it", self.path)
        self._rebuild(self._tree)

    def _remove_connection(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            self._db.close()
            self._db = None

    def _end(self, commit: bool) -> None:
        db = self._db
        if db is None:
            return
        try:
            db.execute("COMMIT" if commit else "ROLLBACK")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        self._tree = None
        self._dirty = False

    def _meta(self, key: str) -> str | None:
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return found[0] if found else None

    @property
    def tree(self) -> str | None:
        """The records tree the open snapshot holds."""
        return self._tree

    # ----------------------------------------------------------------- moving

    def _move(self, tree: str) -> None:
        if tree == self._tree:
            return
        if self._dirty:
            raise GitkbError("internal: the index cache cannot move away from unwritten edits")
        old = self._tree
        if old is None or (old != _NO_TREE and not self.repo.has_object(old)):
            self._rebuild(tree)
            return
        changes = self.repo.tree_changes(old or None, tree or None, rec.RECORDS_DIR)
        self._apply_changes(changes)
        self._set_tree(tree)

    def _rebuild(self, tree: str) -> None:
        db = self._db
        db.execute("DELETE FROM records")
        db.execute("DELETE FROM kernels")
        files = [] if not tree else self.repo.list_tree_id(tree, rec.RECORDS_DIR)
        self._insert((path, sha, self.repo.blob(sha)) for path, sha in files
                     if rec.is_record_path(path))  # fmt: skip
        self._set_tree(tree)

    def _apply_changes(self, changes: list) -> None:
        gone, fresh = [], []
        for change in changes:
            old_regular, new_regular = change.regular
            if old_regular and rec.is_record_path(change.path):
                gone.append(change.path)
            if new_regular and rec.is_record_path(change.path):
                fresh.append((change.path, change.new_sha, self.repo.blob(change.new_sha)))
        self._delete(gone)
        self._insert(fresh)

    def _set_tree(self, tree: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('tree', ?)", (tree,))
        self._tree = tree

    def _delete(self, paths: list[str]) -> None:
        self._db.executemany("DELETE FROM records WHERE path = ?", ((p,) for p in paths))
        self._db.executemany("DELETE FROM kernels WHERE path = ?", ((p,) for p in paths))

    def _insert(self, files: Iterable[tuple[str, str, bytes]]) -> None:
        rows, kernels = [], []
        for path, blob, raw in files:
            values, names = _row_values(path, blob, raw)
            rows.append(values)
            kernels += [(name, path) for name in names]
        self._db.executemany(f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES "
                             f"({', '.join('?' * 14)})", rows)  # fmt: skip
        self._db.executemany("INSERT INTO kernels VALUES (?, ?)", kernels)

    def apply_edits(self, edits: dict[str, tuple[str, bytes] | None], tree: str | None) -> None:
        """A commit written from memory: its record edits (path -> (blob sha, bytes), or None
        for a deletion) applied as they are, then the cache holds ``tree``, that commit's
        records tree. Used inside a snapshot the writer keeps only once the commit lands."""
        paths = [p for p in edits if rec.is_record_path(p)]
        self._delete(paths)
        self._insert((p, *edits[p]) for p in paths if edits[p] is not None)
        self._set_tree(tree or _NO_TREE)
        self._dirty = True

    # ----------------------------------------------------------------- queries

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Run one query in the open snapshot; a cache that turns out unreadable midway is
        rebuilt at the snapshot's tree and the query asked again."""
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            if self._dirty or self._depth == 0:
                raise GitkbError(f"the index cache {self.path} is unreadable ({exc})") from None
            tree = self._tree
            log.info("the index cache %s was unreadable (%s); rebuilding it", self.path, exc)
            self._remove_files()
            self._begin(tree)
            return self._db.execute(sql, params).fetchall()

    def rows(self, where: str = "", params: tuple = ()) -> list[Row]:
        sql = "SELECT path, blob, id, entry, error, source FROM records"
        found = self._query(f"{sql} {where}", params)
        return [Row(p, b, i, json.loads(e) if e else None, err, src)
                for p, b, i, e, err, src in found]  # fmt: skip

    def rows_of(self, record_id: str) -> list[Row]:
        return self.rows("WHERE id = ?", (record_id,))

    def rows_with_signature(self, signature: str) -> list[Row]:
        return self.rows("WHERE signature = ?", (signature,))

    def rows_citing(self, label: str) -> list[Row]:
        """Rows of the records whose ``evidence.raw.source_repo`` is the trace ``label``."""
        return self.rows("WHERE source = ?", (label,))

    def ids(self) -> list[str]:
        found = self._query("SELECT DISTINCT id FROM records WHERE id IS NOT NULL ORDER BY id")
        return [r[0] for r in found]

    def count(self) -> int:
        return self._query("SELECT count(*) FROM records")[0][0]

    def kernel_names(self) -> list[str]:
        return [r[0] for r in self._query("SELECT DISTINCT name FROM kernels")]

    def rows_for_kernels(self, names: Iterable[str]) -> list[Row]:
        names = sorted(set(names))
        if not names:
            return []
        marks = ", ".join("?" * len(names))
        return self.rows(
            f"WHERE path IN (SELECT path FROM kernels WHERE name IN ({marks})) ORDER BY path",
            tuple(names),
        )

    def scoped_rows(self, **scope: str | None) -> list[Row]:
        """Rows of records with an id whose columns equal every given value (type, vendor,
        arch, dsl, family), by id."""
        wanted = {k: v for k, v in scope.items() if v is not None}
        where = "".join(f" AND {column} = ?" for column in wanted)
        return self.rows(f"WHERE id IS NOT NULL{where} ORDER BY id, path", tuple(wanted.values()))


def _read_only(exc: BaseException) -> bool:
    text = str(exc).lower()
    return (
        "readonly" in text
        or "read-only" in text
        or "unable to open" in text
        or isinstance(exc, PermissionError)
    )
