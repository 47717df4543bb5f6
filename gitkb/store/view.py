"""The store as gates and admission builders see it, at one commit.

A view holds the records of ``tip`` (less the paths in ``hidden``: the records a
pushed commit replaces, as at admission), answered by the index cache, and the
repository the caller sees (a server hook's view sees the pushed refs). The same
view type serves an admission, ``git kb validate`` and the pre-receive hook.
"""

from __future__ import annotations

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.store.cache import IndexCache, Row


class StoreView:
    def __init__(
        self,
        repo,
        cache: IndexCache,
        tip: str | None,
        hidden: frozenset[str] = frozenset(),
        files_at: str | None = None,
        location: object = None,
    ) -> None:
        self.repo = repo
        self.cache = cache
        self.tip = tip
        self.hidden = hidden
        # Files beside the records (a trace's mining options) are read at this commit:
        # a pushed commit's own tree holds those its records came with.
        self.files_at = files_at or tip
        self.location = location if location is not None else repo.git_dir
        self.records_tree = repo.subtree(tip, rec.RECORDS_DIR) if tip else None
        # Inside a write: the admissions it made before this view's change.
        self.admitted: list = []

    def _rows(self, rows: list[Row]) -> list[Row]:
        return [r for r in rows if r.path not in self.hidden] if self.hidden else rows

    def rows_of(self, record_id: str) -> list[Row]:
        with self.cache.snapshot(self.records_tree):
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
        with self.cache.snapshot(self.records_tree):
            if not self.hidden:
                return self.cache.count()
            return len(self._rows(self.cache.rows()))

    def entries(self) -> list[dict]:
        """Every index entry, sorted by id."""
        with self.cache.snapshot(self.records_tree):
            rows = self._rows(self.cache.rows("WHERE id IS NOT NULL ORDER BY id, path"))
        return [r.entry for r in rows]

    def ids(self) -> list[str]:
        with self.cache.snapshot(self.records_tree):
            if not self.hidden:
                return self.cache.ids()
            rows = self._rows(self.cache.rows("WHERE id IS NOT NULL"))
        return sorted({r.id for r in rows})

    def rows_with_signature(self, signature: str) -> list[Row]:
        with self.cache.snapshot(self.records_tree):
            return self._rows(self.cache.rows_with_signature(signature))

    def rows_with_episode_key(self, key: str) -> list[Row]:
        with self.cache.snapshot(self.records_tree):
            return self._rows(self.cache.rows("WHERE episode_key = ? ORDER BY id", (key,)))

    def scoped_rows(self, **scope: str | None) -> list[Row]:
        with self.cache.snapshot(self.records_tree):
            return self._rows(self.cache.scoped_rows(**scope))

    def scoped(self, **scope: str | None) -> list[dict]:
        """Index entries whose type, vendor, arch, dsl and family equal the given values."""
        return [r.entry for r in self.scoped_rows(**scope) if r.entry is not None]

    def read_row(self, row: Row) -> rec.RecordFile:
        """The record file a row names, read from the tree. A row whose blob is not the
        tree's means the cache lied: it is rebuilt and the caller told to ask again."""
        sha = self.repo.blob_sha(self.tip, row.path) if self.tip else None
        if sha != row.blob:
            with self.cache.snapshot(self.records_tree):
                self.cache.rebuild()
            raise StaleCache(f"the index cache named {row.path} wrongly; it was rebuilt")
        return rec.load(row.path, self.repo.blob(sha))

    def read_record(self, record_id: str) -> rec.RecordFile:
        for attempt in (1, 2):
            rows = self.rows_of(record_id)
            if not rows:
                raise GitkbError(f"no record {record_id} in {self.location}")
            try:
                return self.read_row(rows[0])
            except StaleCache:
                if attempt == 2:
                    raise GitkbError(f"{record_id}: the index cache cannot be trusted") from None
        raise AssertionError("unreachable")

    def read_file(self, path: str) -> bytes | None:
        """A file beside the records (e.g. a trace's mining options), at ``files_at``."""
        return self.repo.read(self.files_at, path) if self.files_at else None


class StaleCache(GitkbError):
    """The cache named a blob the tree does not hold at that path (rebuilt since)."""
