"""The store as gates, admission builders and readers see it, at one commit.

A view holds the records of ``tip`` (less the paths in ``hidden``: the records a
pushed commit replaces, as at admission), answered by the index cache, and the
repository the caller sees (a server hook's view sees the pushed refs). The same
view type serves an admission, ``git kb validate``, the pre-receive hook and the
readers (resolve, query), which it answers from the cache alone when it can.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gitkb import record as rec
from gitkb.errors import GitkbError, echoed
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.cache.rows import Row
from gitkb.store.cache.source import Lie, RepoOpener
from gitkb.vcs.plain import blob_id
from gitkb.vcs.tree_ids import TreeIds

if TYPE_CHECKING:  # type-only: importing it loads dulwich
    from gitkb.vcs.repository import Repository


class StoreView:
    def __init__(
        self,
        repo_source: Repository | Callable[[], Repository],
        cache: IndexCache,
        tip: str | None,
        hidden: frozenset[str] = frozenset(),
        files_at: str | None = None,
        location: str | None = None,  # where the store is, named in messages
        tree_ids: TreeIds | None = None,
    ) -> None:
        # ``repo_source``: the repository, or a callable opening it on first use.
        self._repo_source = repo_source
        self.cache = cache
        self.tip = tip
        self.hidden = hidden
        # Files beside the records (a trace's mining options) are read at this commit:
        # a pushed commit's own tree holds those its records came with.
        self.files_at = files_at or tip
        self.location = location
        # Inside a write: the admissions it made before this view's change.
        self.admitted: list = []
        # How a reader asks the tree without loading dulwich (C git; None: ask the repo).
        self.tree_ids = tree_ids

    @property
    def repo(self) -> Repository:
        source = self._repo_source
        return source() if callable(source) else source

    def _rows(self, rows: list[Row]) -> list[Row]:
        return [r for r in rows if r.path not in self.hidden] if self.hidden else rows

    def rows_of(self, record_id: str) -> list[Row]:
        with self.cache.snapshot(self.tip):
            return self._rows(self.cache.rows_of(record_id))

    def entry(self, record_id: str) -> dict | None:
        """The index entry of ``record_id`` (the first file holding it), or None."""
        for row in self.rows_of(record_id):
            if row.entry is not None:
                return row.entry
        return None

    def __contains__(self, record_id: str) -> bool:
        return bool(self.rows_of(record_id))

    def __len__(self) -> int:
        """How many record files the view holds."""
        with self.cache.snapshot(self.tip):
            if not self.hidden:
                return self.cache.count()
            return len(self._rows(self.cache.rows()))

    def holds_path(self, path: str) -> bool:
        """Whether a record file sits at ``path``."""
        with self.cache.snapshot(self.tip):
            return bool(self._rows(self.cache.rows("WHERE path = ?", (path,))))

    def entries(self) -> list[dict]:
        """Every index entry of a record with an id, sorted by id."""
        with self.cache.snapshot(self.tip):
            rows = self._rows(self.cache.rows("WHERE id IS NOT NULL ORDER BY id, path"))
        return [r.entry for r in rows if r.entry is not None]

    def ids(self) -> list[str]:
        with self.cache.snapshot(self.tip):
            if not self.hidden:
                return self.cache.ids()
            rows = self._rows(self.cache.rows("WHERE id IS NOT NULL"))
        return sorted({r.id for r in rows})

    def rows_with_signature(self, signature: str) -> list[Row]:
        with self.cache.snapshot(self.tip):
            return self._rows(self.cache.rows_with_signature(signature))

    def rows_with_episode_key(self, key: str) -> list[Row]:
        with self.cache.snapshot(self.tip):
            return self._rows(self.cache.rows("WHERE episode_key = ? ORDER BY id", (key,)))

    def scoped_rows(self, **scope: str | None) -> list[Row]:
        with self.cache.snapshot(self.tip):
            return self._rows(self.cache.scoped_rows(**scope))

    def scoped(self, **scope: str | None) -> list[dict]:
        """Index entries whose type, vendor, arch, dsl and family equal the given values."""
        return [r.entry for r in self.scoped_rows(**scope) if r.entry is not None]

    def read_files(self, paths: list[str]) -> dict[str, bytes]:
        """The bytes of each of ``paths`` that exists under the cached folders (records,
        ledgers, feedback), from the cache, each checked against its blob id (a cache
        caught holding other bytes is rebuilt). What a reader serves goes through
        ``read_checked`` or ``read_row``, which also ask the tree."""
        try:
            with self.cache.snapshot(self.tip):
                return {p: raw for p, (_, raw) in self.cache.files(paths).items()}
        except Lie:
            self.cache.rebuild_at(self.tip)  # inside a write this raises: nothing lands
            with self.cache.snapshot(self.tip):
                return {p: raw for p, (_, raw) in self.cache.files(paths).items()}

    def read_checked(self, paths: list[str]) -> dict[str, bytes]:
        """``read_files`` for a reader that serves what it reads: each file's blob must also
        be the one the tree at ``tip`` holds at its path, so a cache row (copied from
        another store, or forged) never serves what the commit does not hold. A cache
        caught lying raises ``Lie``; the reader asks again over a rebuilt cache
        (``Store.asked``), so no answer mixes its rows with a rebuilt cache's."""
        with self.cache.snapshot(self.tip):
            found = self.cache.files(paths)
        held = self.tree_blobs(list(found))
        for path, (blob, _) in found.items():
            if held[path] != blob:
                raise Lie(f"the index cache named a blob of {path} that {self.tip} does not hold")
        return {p: raw for p, (_, raw) in found.items()}

    def tree_blobs(self, paths: list[str]) -> dict[str, str | None]:
        """Path -> the blob id of the regular file the tree at ``tip`` holds there (None:
        none), asked of C git while the repository is not open (a reader's quick path),
        else of the open repository."""
        if self.tip is None:
            return dict.fromkeys(paths)
        asker = self._c_git()
        found = asker.blob_ids(self.tip, paths) if asker is not None else None
        if found is not None:
            return found
        repo = self.repo
        root = repo.tree_of(self.tip).decode()
        return {p: repo.blob_in_tree(root, p) for p in paths}

    def read_row(self, row: Row) -> rec.RecordFile:
        """The record file a row names, once the tree at ``tip`` holds that blob there and
        the cache's bytes are that blob."""
        loaded = self._row_file(row)
        if loaded is None:
            raise GitkbError(f"{row.path} is not in {self.location} at {self.tip}")
        return loaded

    def _row_file(self, row: Row) -> rec.RecordFile | None:
        raw = self.read_files([row.path]).get(row.path)
        if raw is None or blob_id(raw) != row.blob or not self.holds_row(row):
            return None
        return rec.load(row.path, raw)

    def holds_row(self, row: Row) -> bool:
        """Whether the tree at ``tip`` holds the blob ``row`` names at its path: a cache
        row (copied from another store, or forged) is never served on its own word."""
        return self.tip is not None and self.tree_blobs([row.path])[row.path] == row.blob

    def read_record(self, record_id: str) -> rec.RecordFile:
        """The record ``record_id`` as main's tree holds it. A row the tree does not hold,
        bytes that are not the row's blob, or no row for a record the tree holds: the
        cache lied, and it is rebuilt before the record is read again."""
        named: dict[str, str] | None = None  # the files named for it (one listing)
        for attempt in (1, 2):
            rows = self.rows_of(record_id)
            if rows:
                loaded = self._row_file(rows[0])
                if loaded is not None:
                    return loaded
            else:
                named = self._named(record_id) if named is None else named
                if not self._unlisted(named):
                    break
            if attempt == 1:
                self.cache.rebuild_at(self.tip)  # inside a write this raises: nothing lands
        if rows:
            raise GitkbError(f"{rows[0].path} is not in {self.location} at {self.tip}")
        for path in named or {}:  # a file named for it that does not read
            unread = self.cache.rows("WHERE path = ? AND error IS NOT NULL", (path,))
            if unread:
                raise GitkbError(f"{path} in {self.location} holds no readable record: "
                                 f"{unread[0].error}")  # fmt: skip
        raise GitkbError(f"no record {echoed(record_id)} in {self.location}")

    def _unlisted(self, named: dict[str, str]) -> bool:
        """Whether the cache has no row of its blob for one of ``named`` (the record files
        at ``tip`` named for an id: the check behind "no such record")."""
        if not named:
            return False
        with self.cache.snapshot(self.tip):
            held = self.cache.record_blobs()
        return any(held.get(path) != blob for path, blob in named.items())

    def _named(self, record_id: str) -> dict[str, str]:
        """Path -> blob id of the record files at ``tip`` named for ``record_id``."""
        if self.tip is None:
            return {}
        name = f"/{record_id}.json"
        return {p: blob for p, blob in self.tree_records().items() if p.endswith(name)}

    def tree_records(self) -> dict[str, str]:
        """Path -> blob id of every regular file under ``records/`` in the tree at ``tip``."""
        if self.tip is None:
            return {}
        asker = self._c_git()
        found = asker.files_under(self.tip, rec.RECORDS_DIR) if asker is not None else None
        return found if found is not None else dict(self.repo.list_tree(self.tip, rec.RECORDS_DIR))

    def records_agree(self) -> bool:
        """Whether the cache's record rows are exactly the tree's record files, path and
        blob (one listing of the records folder): no forged, stale or missing row."""
        with self.cache.snapshot(self.tip):
            held = self.cache.record_blobs()
        files = self.tree_records()
        return held == {p: blob for p, blob in files.items() if rec.is_record_path(p)}

    def _c_git(self) -> TreeIds | None:
        """Where the tree is asked while the repository is not open (a reader's quick path:
        C git, no dulwich); None once it is open (ask it)."""
        source = self._repo_source
        return self.tree_ids if isinstance(source, RepoOpener) and not source.loaded() else None

    def read_file(self, path: str) -> bytes | None:
        """A file beside the records (e.g. a trace's mining options), at ``files_at``."""
        return self.repo.read(self.files_at, path) if self.files_at else None
