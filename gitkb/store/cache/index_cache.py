"""The index cache: a store's index entries, and the files readers need, in SQLite under
the git directory.

Like git's own commit-graph, the index is derived data and stays out of history
(store format 2). The cache holds one commit at a time: the index entries of its
records, and the bytes of every file under the folders readers use (records,
ledgers, feedback), compressed, each with its blob id. Moving it to another commit
applies the tree diff of those folders, so its cost follows the change. It is
rebuilt from the commit when missing, unreadable, of another layout version, or
found lying (a random sample of rows checked against the tree whenever the
repository is at hand; every file served checked against its blob id): never
trusted without a check. A git directory that cannot be written gets a cache in
memory instead.

A reader whose cache already holds the commit ``main`` names needs no repository
at all (``Store.open``'s quick path): the cache is opened with the git directory
and a way to open the repository should the cache have to move.

Every use runs inside ``snapshot(commit)``: one SQLite transaction holding the
cache at that commit, so a reader never sees another process move it midway. The
cache moves to the snapshot's commit when the snapshot is first asked something: a
block that asks nothing (a push whose gates read no other record) builds nothing, and
a cache that holds a commit already is moved at the end of a kept block all the same,
so a server's cache keeps up with its branch.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from gitkb.errors import GitkbError
from gitkb.layout import CACHE_DIR, CACHED_DIRS, CONFIG_PATH
from gitkb.store.cache import tables
from gitkb.store.cache.file import (
    FILE_NAME,
    close_quietly,
    open_file,
    open_memory,
    pack,
    read_only,
    unpack,
)
from gitkb.store.cache.rows import (
    COLUMNS,
    KERNEL_COLUMNS,
    KernelRow,
    Row,
    RowValues,
    kernel_row,
    row_values,
    without_techniques,
)
from gitkb.store.cache.source import Lie, RepoOpener, blob_or_none
from gitkb.util import log
from gitkb.vcs.plain import blob_id

if TYPE_CHECKING:  # type-only: importing it loads dulwich
    from gitkb.vcs.repository import Repository

T = TypeVar("T")

_NO_COMMIT = ""  # an empty store view: no commit, no files
_SAMPLE = 3
_BATCH = 500  # paths per statement (SQLite allows 32,766 parameters)
_VERIFIED = 1024  # blobs whose bytes ``files`` keeps once checked (forgotten all at once)
_FACTS = 4096  # facts ``remembered`` keeps of one commit (forgotten all at once)
_WRITE_CACHE_KIB = 64 << 10  # SQLite's page cache while the writer applies edits


def _note(text: str, *args: object) -> None:
    """A note on stderr (``gitkb.util.log``)."""
    log.logger(__name__).info(text, *args)


# What a cache that cannot be read raises past its own recovery (the SQLite error class):
# a caller outside gitkb.store names it so, not by SQLite's module.
CacheError = sqlite3.Error


def _tracked(path: str) -> bool:
    return path.split("/", 1)[0] in CACHED_DIRS


class IndexCache:
    """The cached entries and files of one repository, at one commit at a time."""

    def __init__(self, git_dir: str | None, open_repo: RepoOpener) -> None:
        self.path = os.path.join(git_dir, CACHE_DIR, FILE_NAME) if git_dir is not None else None
        self._open_repo = open_repo
        self._db: sqlite3.Connection | None = None
        self._depth = 0  # nesting of snapshot()
        self._commit: str | None = None  # the commit the open transaction holds
        self._wanted: str | None = None  # the commit the open snapshot is at (``commit``)
        self._here = False  # whether the transaction holds ``_wanted``, checked by a sample
        self._opened: str | None = None  # the commit the outermost snapshot was opened at
        self._dirty = False  # edits applied in the open transaction from objects in memory
        # The commit whose rows this connection last sampled and found agreeing: a
        # process that keeps its store open (the MCP server) samples once per commit.
        self._sampled: str | None = None
        # Facts of the rows at one commit (``remembered``): a server asks each question anew
        self._facts: dict[tuple, object] = {}
        self._facts_commit: str | None = None
        # Blob id -> its bytes, inflated and checked against that id once: a blob's bytes
        # never change, so a server serving the same hits again skips zlib and SHA-1.
        self._verified: dict[str, bytes] = {}

    @classmethod
    def of(cls, repo: Repository) -> IndexCache:
        return cls(os.fspath(repo.git_dir), RepoOpener(None, repo))

    @property
    def repo(self) -> Repository:
        return self._open_repo()

    # ----------------------------------------------------------------- connection

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        if self.path is not None:
            try:
                self._db = open_file(self.path)
                # Closed when the cache goes, or when the interpreter ends (weakref's
                # finalizers run at exit): a process that skips shutdown's collection
                # (``cli.main`` freezes its objects) still checkpoints and removes the
                # write-ahead log, as a closed connection does.
                weakref.finalize(self, close_quietly, self._db)
                return self._db
            except (sqlite3.DatabaseError, OSError) as exc:
                if os.path.exists(self.path) and not read_only(exc):
                    _note("the index cache %s was unusable (%s); rebuilding it", self.path, exc)
                    self._remove_files()
                    try:
                        self._db = open_file(self.path)
                        weakref.finalize(self, close_quietly, self._db)
                        return self._db
                    except (sqlite3.DatabaseError, OSError):
                        pass
                _note("the index cache cannot be kept in %s; keeping it in memory", self.path)
                self.path = None
        self._db = open_memory()
        return self._db

    def _remove_files(self) -> None:
        if self._db is not None:
            close_quietly(self._db)
            self._db = None
        if self.path is not None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.path}{suffix}")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def held_commit(self) -> str | None:
        """The commit the cache holds now (without moving it); None when unknown."""
        try:
            db = self._connect()
            found = db.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()
        except sqlite3.Error:
            return None
        return found[0] if found and found[0] else None

    def held_file(self, path: str) -> bytes | None:
        """A file of the held commit that the cache keeps beside the folders it tracks
        (``gitkb.toml``), read without moving the cache."""
        try:
            found = (
                self._connect()
                .execute("SELECT blob, raw FROM files WHERE path = ?", (path,))
                .fetchone()
            )
        except sqlite3.Error:
            return None
        return unpack(found[1]) if found else None

    # ----------------------------------------------------------------- snapshots

    def snapshot(
        self, commit: str | None, keep: bool = True
    ) -> contextlib.AbstractContextManager[IndexCache]:
        """Hold the cache at ``commit`` (None: an empty store) for the block. The outermost
        block owns one transaction: committed at the end when ``keep``, rolled back
        otherwise (a pre-receive check leaves the cache where it was). Nested blocks move
        the cache inside that transaction."""
        return _snapshot(self, commit or _NO_COMMIT, keep)

    def _begin(self, commit: str) -> None:
        """Open the snapshot's transaction at ``commit`` (the cache moves when asked)."""
        self._open(commit, begin=True, arrive=False)

    def _arrive(self) -> None:
        """Bring the open transaction to the snapshot's commit, and sample it once per
        commit: moved by the tree diff, or built from the tree where the cache holds no
        commit of this repository. Outside a snapshot the cache is read as it stands."""
        if self._depth and not self._here:
            self._open(self._wanted or _NO_COMMIT, begin=False, arrive=True)

    def _open(self, commit: str, begin: bool, arrive: bool) -> None:
        """Begin the transaction (``begin``; again after the cache had to be dropped) and
        bring it to ``commit`` (``arrive``)."""
        for attempt in (1, 2):
            try:
                if begin:
                    db = self._connect()
                    db.execute("BEGIN IMMEDIATE")
                    self._commit = self._meta("commit")
                    self._dirty = False
                    self._wanted, self._opened, self._here = commit, commit, False
                if arrive:
                    self._go(commit)
                return
            except sqlite3.OperationalError as exc:
                if read_only(exc) and self.path is not None:
                    _note("the index cache %s is read-only (%s); keeping one in memory",
                          self.path, exc)  # fmt: skip
                    self._remove_connection()
                    self.path, begin = None, True
                    continue
                raise GitkbError(f"the index cache {self.path} cannot be used ({exc})") from None
            except sqlite3.DatabaseError as exc:
                if attempt == 2:
                    raise GitkbError(f"the index cache cannot be rebuilt ({exc})") from None
                _note("the index cache %s was unreadable (%s); rebuilding it", self.path, exc)
                self._remove_files()
                begin = True

    def _go(self, commit: str) -> None:
        """Move the open transaction to ``commit`` (built first where it holds no commit of
        this repository), then sample it once per commit."""
        if commit != self._commit and self._cold():
            self._build_kept()
        self._move(commit)
        if self._sampled != self._commit:
            if not self._sample_agrees():
                _note("the index cache %s disagreed with the records; rebuilding it", self.path)
                self._rebuild(commit)
            self._sampled = self._commit
        self._here = True

    def _cold(self) -> bool:
        """Whether the transaction holds no commit of this repository: moving it builds."""
        return not self._commit or not self.repo.has_object(self._commit)

    def _build_kept(self) -> None:
        """Build the cache at the commit the block was opened at and keep it at once,
        whatever the block does next (a check rolls its own moves back): a build from
        every record is paid once, not by every block that asks."""
        self._rebuild(self._opened or _NO_COMMIT)
        self._db.execute("COMMIT")
        self._db.execute("BEGIN IMMEDIATE")
        self._commit = self._meta("commit")  # another process may have moved it between

    def _want(self, commit: str) -> None:
        """Move the open snapshot to ``commit`` (the cache follows when asked)."""
        if commit == self._wanted:
            return
        if self._dirty:
            raise GitkbError("internal: the index cache cannot move away from unwritten edits")
        self._wanted, self._here = commit, False

    def warm(self, commit: str | None) -> None:
        """Bring the cache to ``commit`` now, and keep it: the next use costs its change."""
        with self.snapshot(commit):
            self._arrive()

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
        if commit and not self._here and self._commit and self._commit != self._wanted:
            # Asked nothing, and holding another commit: moved all the same (by its diff),
            # so a cache kept in use (a server's) keeps up. One that holds none is built
            # when something is asked of it.
            try:
                self._open(self._wanted or _NO_COMMIT, begin=False, arrive=True)
            except BaseException:
                self._end(False)
                raise
            db = self._db
        try:
            db.execute("COMMIT" if commit else "ROLLBACK")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        self._commit = self._wanted = self._opened = None
        self._dirty = self._here = False

    def _meta(self, key: str) -> str | None:
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return found[0] if found else None

    def _sample_agrees(self) -> bool:
        """A few records, picked at random, derived again from the bytes the cache keeps
        (which must be the blobs it names) and, where the repository is open already,
        checked against the tree: a cache edited or copied from another store is caught
        here or when a file it serves is checked against its blob id."""
        if not self._commit:
            return True
        last = self._db.execute("SELECT max(rowid) FROM records").fetchone()[0]
        if not last:
            return True
        picks = self._db.execute(
            f"SELECT {COLUMNS} FROM records LEFT JOIN entries USING (path) "
            "WHERE records.rowid >= abs(random()) % ? LIMIT ?",
            (last, _SAMPLE),
        ).fetchall()
        check_tree = self._open_repo.loaded()
        for held in picks:
            path, blob = held[0], held[1]
            found = self._db.execute("SELECT blob, raw FROM files WHERE path = ?", (path,))
            stored = found.fetchone()
            if stored is None or stored[0] != blob:
                return False
            raw = unpack(stored[1])
            if stored[1] is not None and (raw is None or blob_id(raw) != blob):
                return False
            derived = row_values(path, blob, raw, techniques=False)[0] if raw is not None else None
            if derived is not None and derived != without_techniques(tuple(held)):
                return False
            if check_tree and self.repo.blob_sha(self._commit, path) != blob:
                return False
        return True

    def rebuild(self) -> None:
        """Rebuild the open snapshot's commit from its tree (the caller found a lie)."""
        if self._dirty:
            raise GitkbError("internal: the index cache cannot be rebuilt under unwritten edits")
        _note("the index cache %s disagreed with the records; rebuilding it", self.path)
        self._rebuild(self._wanted)
        self._here = True

    def rebuild_at(self, commit: str | None) -> None:
        """Rebuild the cache at ``commit`` from its tree, in a snapshot of its own (nested
        when one is open)."""
        with self.snapshot(commit):
            self.rebuild()

    @property
    def commit(self) -> str | None:
        """The commit the open snapshot holds."""
        return self._wanted or None

    # ----------------------------------------------------------------- moving

    def _move(self, commit: str) -> bool:
        """Bring the open transaction to ``commit``; whether it had to move."""
        if commit == self._commit:
            return False
        if self._dirty:
            raise GitkbError("internal: the index cache cannot move away from unwritten edits")
        from gitkb.vcs import treediff  # beside the open Repository: dulwich is loaded

        repo = self.repo
        old = self._commit
        if not old or not repo.has_object(old):
            self._rebuild(commit)
            return True
        changes = []
        for folder in CACHED_DIRS:
            before = repo.subtree(old, folder)
            after = repo.subtree(commit, folder) if commit else None
            if before != after:
                changes += treediff.tree_changes(repo, before, after, folder)
        self._apply_changes(changes)
        self._set_commit(commit)
        return True

    def _rebuild(self, commit: str | None) -> None:
        self._facts_commit = None
        db = self._db
        for table in ("records", "entries", "kernels", "arches", "files"):
            db.execute(f"DELETE FROM {table}")
        if commit:
            repo = self.repo
            files = [
                (path, sha, blob_or_none(repo, sha))
                for folder in CACHED_DIRS
                for path, sha in repo.list_tree(commit, folder)
            ]
            tables.put(self._db, files)
        self._set_commit(commit or _NO_COMMIT)

    def _apply_changes(self, changes: list) -> None:
        repo = self.repo
        gone, fresh = [], []
        for change in changes:
            old_regular, new_regular = change.regular
            if old_regular and not new_regular:
                gone.append(change.path)
            if new_regular:
                fresh.append((change.path, change.new_sha, blob_or_none(repo, change.new_sha)))
        tables.delete(self._db, gone)
        tables.put(self._db, fresh)

    def _set_commit(self, commit: str, config_may_change: bool = True) -> None:
        db = self._db
        db.execute("INSERT OR REPLACE INTO meta VALUES ('commit', ?)", (commit,))
        self._commit = commit
        if not config_may_change:
            return
        # gitkb.toml rides along (Store.open's quick path reads it); it seldom changes.
        sha = self.repo.blob_sha(commit, CONFIG_PATH) if commit else None
        held = db.execute("SELECT blob FROM files WHERE path = ?", (CONFIG_PATH,)).fetchone()
        if (held and held[0]) != sha:
            db.execute("DELETE FROM files WHERE path = ?", (CONFIG_PATH,))
            if sha:
                raw = pack(self.repo.blob(sha))
                db.execute("INSERT INTO files VALUES (?, ?, ?)", (CONFIG_PATH, sha, raw))

    def apply_edits(
        self,
        edits: dict[str, bytes | None],
        commit: str,
        parsed: Mapping[str, dict] | None = None,
        deflated: Callable[[str], bytes | None] | None = None,
        rows: Mapping[str, RowValues] | None = None,
    ) -> None:
        """A commit written from memory: its edits to the tracked folders (path -> bytes, or
        None for a deletion) applied as they are, then the cache holds ``commit``. Used
        inside a snapshot the writer keeps only once the commit lands. ``parsed``: the
        records among the edits as the writer parsed them from the same bytes;
        ``deflated``: a blob's bytes as the writer deflated them, by blob id; ``rows``:
        their cache rows worked out ahead, by path (``_put``)."""
        self._arrive()  # the edits apply to the snapshot's commit, their parent
        if not self._dirty:
            # A write's first edit: a chunk of admissions dirties thousands of pages of
            # the tables and their indexes, which SQLite's default 2 MB page cache would
            # spill to the file midway and read back; the pages a write touches fit here.
            self._db.execute(f"PRAGMA cache_size = -{_WRITE_CACHE_KIB}")
        paths = [p for p in edits if _tracked(p)]
        deleted = [p for p in paths if edits[p] is None]
        if deleted:
            tables.delete(self._db, deleted)
        written = ((p, blob_id(edits[p]), edits[p]) for p in paths if edits[p] is not None)
        tables.put(self._db, written, parsed, deflated, rows)
        self._set_commit(commit, CONFIG_PATH in edits)
        self._wanted, self._dirty = commit, True

    # ----------------------------------------------------------------- queries

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Run one query in the open snapshot; a cache that turns out unreadable midway is
        rebuilt at the snapshot's commit and the query asked again."""
        try:
            self._arrive()
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            if self._dirty or self._depth == 0:
                raise GitkbError(f"the index cache {self.path} is unreadable ({exc})") from None
            commit = self._wanted
            _note("the index cache %s was unreadable (%s); rebuilding it", self.path, exc)
            self._remove_files()
            self._begin(commit)
            self._arrive()
            return self._db.execute(sql, params).fetchall()

    def rows(self, where: str = "", params: tuple = ()) -> list[Row]:
        sql = (
            "SELECT path, blob, id, entry, error, source "
            "FROM records LEFT JOIN entries USING (path)"
        )
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

    def record_blobs(self) -> dict[str, str]:
        """Path -> blob id of every record row (what a reader checks against the tree)."""
        return dict(self._query("SELECT path, blob FROM records"))

    def ids(self) -> list[str]:
        found = self._query("SELECT DISTINCT id FROM records WHERE id IS NOT NULL ORDER BY id")
        return [r[0] for r in found]

    def count(self) -> int:
        return self._query("SELECT count(*) FROM records")[0][0]

    def kernel_names(self) -> list[str]:
        return [r[0] for r in self._query("SELECT DISTINCT name FROM kernels")]

    def kernel_rows(self, names: Iterable[str]) -> list[KernelRow]:
        """The rows of the records filed under any of ``names``, without decoding their
        entries."""
        names = sorted(set(names))
        if not names:
            return []
        marks = ", ".join("?" * len(names))
        # one run of the kernels table per name; a record filed under two of them, once
        found = self._query(
            f"SELECT DISTINCT {', '.join(KERNEL_COLUMNS)} FROM kernels "
            f"WHERE name IN ({marks}) ORDER BY path",
            tuple(names),
        )
        return [kernel_row(values) for values in found]

    def scoped_rows(self, **scope: str | None) -> list[Row]:
        """Rows of records with an id whose columns equal every given value (type, vendor,
        arch, dsl, family), by id."""
        wanted = {k: v for k, v in scope.items() if v is not None}
        where = "".join(f" AND {column} = ?" for column in wanted)
        return self.rows(f"WHERE id IS NOT NULL{where} ORDER BY id, path", tuple(wanted.values()))

    def remembered(self, key: tuple, compute: Callable[[], T]) -> T:
        """``compute()``, a fact of the open snapshot's rows (``key`` names it), computed once
        while the cache holds this commit: a process that keeps its store (the MCP server)
        asks the vocabulary's questions of every query anew. Not kept under edits."""
        self._arrive()
        if self._dirty:
            return compute()
        if self._facts_commit != self._commit or len(self._facts) >= _FACTS:
            self._facts, self._facts_commit = {}, self._commit
        if key not in self._facts:
            self._facts[key] = compute()
        return self._facts[key]  # type: ignore[return-value]

    def select(self, sql: str, params: tuple = ()) -> list[tuple]:
        """One read-only statement over the snapshot's tables (``records``, ``kernels``,
        ``arches``, ``files``): for the store's own query modules (``gitkb.store.cache.queries``,
        ``vocabulary``), which turn its tuples into named rows; nothing outside
        ``gitkb.store`` writes SQL."""
        if sql.lstrip()[:6].upper() != "SELECT":
            raise GitkbError("internal: IndexCache.select runs one SELECT statement")
        return self._query(sql, params)

    def files(self, paths: Iterable[str]) -> dict[str, tuple[str, bytes]]:
        """(blob sha, bytes) of each of ``paths`` the snapshot holds, each checked against
        its blob id; a file that fails the check raises Lie."""
        wanted = list(dict.fromkeys(paths))
        held: dict[str, tuple[str, bytes]] = {}
        for at in range(0, len(wanted), _BATCH):  # one statement per batch of paths
            batch = tuple(wanted[at : at + _BATCH])
            marks = ", ".join("?" * len(batch))
            sql = f"SELECT path, blob, raw FROM files WHERE path IN ({marks}) AND raw IS NOT NULL"
            held.update((path, (blob, packed)) for path, blob, packed in self._query(sql, batch))
        out = {}
        verified = self._verified
        for path in wanted:
            if path not in held:
                continue  # no such file, or its object cannot be read from the repository
            blob, packed = held[path]
            raw = verified.get(blob)
            if raw is None:
                raw = unpack(packed)
                if raw is None or blob_id(raw) != blob:
                    raise Lie(f"the index cache held a wrong copy of {path}")
                if len(verified) >= _VERIFIED:
                    verified.clear()
                verified[blob] = raw
            out[path] = (blob, raw)
        return out


@contextlib.contextmanager
def _snapshot(cache: IndexCache, commit: str, keep: bool) -> Iterator[IndexCache]:
    """``IndexCache.snapshot``'s block: the outermost one opens the transaction at
    ``commit`` and ends it (kept when ``keep`` and nothing raised); a nested one moves
    the open transaction to ``commit``."""
    if not cache._depth:
        cache._begin(commit)
        cache._depth = 1
        ok = False
        try:
            yield cache
            ok = True
        finally:
            cache._depth = 0
            cache._end(ok and keep)
        return
    cache._depth += 1
    try:
        cache._want(commit)
        yield cache
    finally:
        cache._depth -= 1
