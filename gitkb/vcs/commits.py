"""Writing commits without a work tree: blobs, trees edited path by path, commits, and
batches whose objects reach the disk as one pack. ``Repository`` inherits these; they
use its object access (``get_object``, ``add_object``, ``tree_of``)."""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import stat
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from dulwich.objects import Blob, Commit, Tree, TreeEntry

from gitkb.errors import GitkbError
from gitkb.vcs import pack
from gitkb.vcs.plain import identity

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore
    from dulwich.objects import ShaFile


class Digest(Protocol):
    """A hash object as hashlib makes one (what ``sha()`` answers, as dulwich's do)."""

    def digest(self) -> bytes: ...
    def hexdigest(self) -> str: ...


FILE_MODE = 0o100644
TREE_MODE = 0o040000


def _b(text: str) -> bytes:
    return text.encode("utf-8")


class CommitWriting:
    """The commit-writing half of ``Repository``."""

    if TYPE_CHECKING:  # the reading half, in Repository
        _objects: DiskObjectStore
        _pending: dict[bytes, ShaFile] | None
        _delta_bases: dict[bytes, bytes]
        _deflated: dict[bytes, bytes]
        _packs: list[pack.PackedObjects] | None
        _committer: str | None

        def add_object(self, obj: ShaFile) -> None: ...
        def get_object(self, sha: bytes) -> ShaFile: ...
        def _read(self, sha: bytes) -> tuple[int, bytes]: ...
        def tree_of(self, commit: str) -> bytes: ...

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Objects written inside reach the disk together, as one pack, when the block
        ends without error: many commits cost two files instead of ten each.
        Refs must only be moved after the block."""
        self._pending, self._delta_bases, self._deflated = {}, {}, {}
        # Read once for the batch's commits (the environment lookups cost more than a commit).
        self._committer = identity()
        try:
            yield
            if self._pending:
                pack.write_pack(
                    self._objects, self._pending.values(), self._delta_bases, self._deflated
                )
                self._packs = None  # the reader's pack list, to hold the new one
        finally:
            self._pending, self._deflated, self._committer = None, {}, None

    def write_blob(self, data: bytes, ahead: Mapping[bytes, bytes] | None = None) -> str:
        """Write one blob; ``ahead``: zlib streams (``pack.deflate``) already made of some
        bytes, by blob id, taken for this blob when its id is theirs."""
        blob = Blob.from_string(data)
        self.add_object(blob)
        if self._pending is not None:
            # Deflated once, for the pack and for whoever else keeps it (the index cache
            # keeps file bytes in the same zlib form: ``deflated``).
            known = ahead.get(blob.id) if ahead else None
            self._deflated[blob.id] = known or pack.deflate(data)
        return blob.id.decode()

    def deflated(self, sha: str) -> bytes | None:
        """The zlib stream of a blob written in the open batch (``pack.deflate`` of its
        bytes), or None."""
        return self._deflated.get(_b(sha))

    def _edit_tree(
        self, tree_id: bytes | None, edits: dict[tuple[bytes, ...], bytes | None]
    ) -> bytes | None:
        """Apply edits (path parts -> blob id, or None to delete) to one tree; None when empty.

        A tree is edited as its sorted list of raw entries and written from their bytes: a
        commit changes one entry of a folder of hundreds, and the rest are copied, not
        parsed and serialized again."""
        rows = list(self._tree_rows(tree_id)) if tree_id is not None else []
        nested: dict[bytes, dict[tuple[bytes, ...], bytes | None]] = {}
        for parts, blob_id in edits.items():
            if len(parts) == 1:
                _put_row(rows, parts[0], None if blob_id is None else (FILE_MODE, blob_id))
            else:
                nested.setdefault(parts[0], {})[parts[1:]] = blob_id
        for name, sub_edits in nested.items():
            current = _find_row(rows, name)
            held = _row_entry(rows[current]) if current is not None else None
            sub_id = held[1] if held and stat.S_ISDIR(held[0]) else None
            new_sub = self._edit_tree(sub_id, sub_edits)
            _put_row(rows, name, None if new_sub is None else (TREE_MODE, new_sub))
        if not rows:
            return None
        tree = _RawTree(b"".join([row[1] for row in rows]), rows)
        if self._pending is not None:
            if tree_id is not None and tree_id in self._pending:
                # the folder's version before this commit: the new one is a delta of it
                self._delta_bases.setdefault(tree.id, tree_id)
            self.add_object(tree)
        else:
            self.add_object(tree.parsed())
        return tree.id

    def _tree_rows(self, tree_id: bytes) -> list[tuple[bytes, bytes]]:
        """A tree's entries as (sort key, raw entry bytes), in git's order."""
        held = self._pending.get(tree_id) if self._pending is not None else None
        if isinstance(held, _RawTree):
            return held.rows
        if held is None:
            # The stored bytes, checked against the id, split without building a dulwich
            # Tree (parsing it and serializing it back cost more than the edit).
            kind, raw = self._read(tree_id)
            if kind == Tree.type_num and _tree_id(raw) == tree_id:
                return _rows_of(raw)
        return _rows_of(self.get_object(tree_id).as_raw_string())  # dulwich names a problem

    def _blob_edits(
        self, edits: Mapping[str, bytes | None], ahead: Mapping[bytes, bytes] | None = None
    ) -> dict[tuple[bytes, ...], bytes | None]:
        """Slash paths -> new bytes (None: delete) as path parts -> written blob ids."""
        blob_edits: dict[tuple[bytes, ...], bytes | None] = {}
        for path, data in edits.items():
            parts = tuple(_b(p) for p in path.split("/") if p)
            if not parts or any(p in (b".", b"..") for p in parts):
                raise GitkbError(f"refusing to write outside the tree: {path!r}")
            blob_edits[parts] = None if data is None else _b(self.write_blob(data, ahead))
        return blob_edits

    def _empty_tree(self) -> bytes:
        empty = Tree()
        self.add_object(empty)
        return empty.id

    def write_commit(
        self,
        parent: str | None,
        edits: Mapping[str, bytes | None],
        message: str,
        author: str | None = None,
        when: int | None = None,
        deflated: Mapping[bytes, bytes] | None = None,
    ) -> str:
        """Write the objects of one commit (no ref moves): ``parent``'s tree with ``edits``.

        ``edits`` maps a slash path to new file bytes, or to None to delete it;
        ``deflated``: zlib streams of some of those bytes made ahead, by blob id.
        """
        blob_edits = self._blob_edits(edits, deflated)
        base_tree = self.tree_of(parent) if parent else None
        tree_id = self._edit_tree(base_tree, blob_edits) or self._empty_tree()
        committer = self._committer or identity()
        now = int(time.time()) if when is None else when
        offset = -time.timezone if not time.localtime(now).tm_isdst else -time.altzone
        commit = Commit()
        commit.tree = tree_id
        commit.parents = [_b(parent)] if parent else []
        commit.author = _b(author or committer)
        commit.committer = _b(committer)
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = offset
        commit.encoding = b"UTF-8"
        commit.message = _b(message)
        self.add_object(commit)
        return commit.id.decode()

    def rewrite_commit(
        self, sha: str, parents: list[str], edits: Mapping[str, bytes | None], message: str
    ) -> str:
        """Write a copy of commit ``sha`` with other ``parents``, ``edits`` applied to its own
        tree and another ``message``; authors, committers and their dates stay."""
        original = self.get_object(_b(sha))
        blob_edits = self._blob_edits(edits)
        tree_id = self._edit_tree(original.tree, blob_edits) if blob_edits else original.tree
        commit = Commit()
        commit.tree = tree_id or self._empty_tree()
        commit.parents = [_b(p) for p in parents]
        for name in ("author", "committer", "author_time", "commit_time", "author_timezone",
                     "commit_timezone", "encoding"):  # fmt: skip
            setattr(commit, name, getattr(original, name))
        commit.message = _b(message)
        self.add_object(commit)
        return commit.id.decode()


class _RawTree:
    """A tree written in a batch, held as its bytes and entry rows: the next commit edits
    the rows, the pack takes the bytes, and only a reader that looks inside (a path lookup
    at a pending commit) has it parsed."""

    type_num = Tree.type_num
    type_name = Tree.type_name

    def __init__(self, raw: bytes, rows: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        self.rows = rows
        self._sha = _tree_sha(raw)
        self.id = self._sha.hexdigest().encode()
        self._tree: Tree | None = None

    def sha(self) -> Digest:
        return self._sha

    def as_raw_string(self) -> bytes:
        return self.raw

    def parsed(self) -> Tree:
        if self._tree is None:
            self._tree = Tree.from_raw_string(Tree.type_num, self.raw, sha=self.id)
        return self._tree

    def __getitem__(self, name: bytes) -> tuple[int, bytes]:
        return self.parsed()[name]

    def __contains__(self, name: bytes) -> bool:
        return name in self.parsed()

    def __len__(self) -> int:
        return len(self.rows)

    def items(self) -> list[TreeEntry]:
        return self.parsed().items()


def _tree_sha(raw: bytes) -> Digest:
    return hashlib.sha1(b"tree %d\0" % len(raw) + raw)


def _tree_id(raw: bytes) -> bytes:
    return _tree_sha(raw).hexdigest().encode()


def _sort_key(name: bytes, mode: int) -> bytes:
    """Git orders a tree's entries by name, a folder's name as if it ended in '/'."""
    return name + b"/" if stat.S_ISDIR(mode) else name


def _rows_of(raw: bytes) -> list[tuple[bytes, bytes]]:
    """(sort key, raw entry) of each entry of a tree's bytes."""
    rows, position = [], 0
    while position < len(raw):
        space = raw.index(b" ", position)
        end = raw.index(b"\0", space) + 21
        mode, name = int(raw[position:space], 8), raw[space + 1 : end - 21]
        rows.append((_sort_key(name, mode), raw[position:end]))
        position = end
    return rows


def _row_entry(row: tuple[bytes, bytes]) -> tuple[int, bytes]:
    """(mode, hex sha) of one raw entry."""
    raw = row[1]
    space = raw.index(b" ")
    return int(raw[:space], 8), raw[-20:].hex().encode()


def _find_row(rows: list[tuple[bytes, bytes]], name: bytes) -> int | None:
    for key in (name, name + b"/"):
        # (key,) sorts just before the row (key, raw): tuples compare in C, no key function
        at = bisect.bisect_left(rows, (key,))
        if at < len(rows) and rows[at][0] == key:
            return at
    return None


def _put_row(rows: list[tuple[bytes, bytes]], name: bytes, entry: tuple[int, bytes] | None) -> None:
    """Set (mode, hex sha) as the entry ``name`` in sorted ``rows``; None removes it."""
    at = _find_row(rows, name)
    if entry is None:
        if at is not None:
            del rows[at]
        return
    mode, sha = entry
    key = _sort_key(name, mode)
    row = (key, b"%o %s\0%s" % (mode, name, bytes.fromhex(sha.decode())))
    if at is not None and rows[at][0] == key:
        rows[at] = row  # the same kind of entry: it keeps its place
        return
    if at is not None:
        del rows[at]
    rows.insert(bisect.bisect_left(rows, (key,)), row)
