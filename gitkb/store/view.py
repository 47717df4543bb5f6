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
from gitkb.errors import GitkbError
from gitkb.store.cache import IndexCache, Lie
from gitkb.store.rows import Row

if TYPE_CHECKING:
    from gitkb.vcs.repository import Repository


class StoreView:
    def __init__(
        self,
        repo_source: Repository | Callable[[], Repository],
        cache: IndexCache,
        tip: str | None,
        hidden: frozenset[str] = frozenset(),
        files_at: str | None = None,
        location: object = None,
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
        ledgers, feedback), from the cache, each checked against its blob id."""
        try:
            with self.cache.snapshot(self.tip):
                return {p: raw for p, (_, raw) in self.cache.files(paths).items()}
        except Lie:
            with self.cache.snapshot(self.tip):  # inside a write this raises: nothing lands
                self.cache.rebuild()
            with self.cache.snapshot(self.tip):
                return {p: raw for p, (_, raw) in self.cache.files(paths).items()}

    def read_row(self, row: Row) -> rec.RecordFile:
        """The record file a row names, once the tree at ``tip`` holds that blob there."""
        raw = self.read_files([row.path]).get(row.path)
        if raw is None or not self.holds_row(row):
            raise GitkbError(f"{row.path} is not in {self.location} at {self.tip}")
        return rec.load(row.path, raw)

    def holds_row(self, row: Row) -> bool:
        """Whether the tree at ``tip`` holds the blob ``row`` names at its path: a cache
        row (copied from another store, or forged) is never served on its own word."""
        return self.tip is not None and self.repo.blob_sha(self.tip, row.path) == row.blob

    def read_record(self, record_id: str) -> rec.RecordFile:
        rows = self.rows_of(record_id)
        if rows and not self.holds_row(rows[0]):
            with self.cache.snapshot(self.tip):  # inside a write this raises: nothing lands
                self.cache.rebuild()
            rows = self.rows_of(record_id)
        if not rows:
            raise GitkbError(f"no record {record_id} in {self.location}")
        return self.read_row(rows[0])

    def read_file(self, path: str) -> bytes | None:
        """A file beside the records (e.g. a trace's mining options), at ``files_at``."""
        return self.repo.read(self.files_at, path) if self.files_at else None
