"""Writing commits without a work tree: blobs, trees edited path by path, commits, and
batches whose objects reach the disk as one pack. ``Repository`` inherits these; they
use its object access (``get_object``, ``add_object``, ``tree_of``)."""

from __future__ import annotations

import contextlib
import stat
import time
from collections.abc import Iterator, Mapping

from dulwich.objects import Blob, Commit, Tree

from gitkb.errors import GitkbError
from gitkb.vcs import pack
from gitkb.vcs.plain import identity

FILE_MODE = 0o100644
TREE_MODE = 0o040000


def _b(text: str) -> bytes:
    return text.encode("utf-8")


class CommitWriting:
    """The commit-writing half of ``Repository``."""

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Objects written inside reach the disk together, as one pack, when the block
        ends without error: many commits cost two files instead of ten each.
        Refs must only be moved after the block."""
        self._pending = {}
        try:
            yield
            if self._pending:
                pack.write_pack(self._objects, self._pending.values())
        finally:
            self._pending = None

    def write_blob(self, data: bytes) -> str:
        blob = Blob.from_string(data)
        self.add_object(blob)
        return blob.id.decode()

    def _edit_tree(
        self, tree_id: bytes | None, edits: dict[tuple[bytes, ...], bytes | None]
    ) -> bytes | None:
        """Apply edits (path parts -> blob id, or None to delete) to one tree; None when empty."""
        # A copy parsed from the old tree's bytes (in C) costs less than re-adding its entries.
        tree = self.get_object(tree_id).copy() if tree_id is not None else Tree()
        nested: dict[bytes, dict[tuple[bytes, ...], bytes | None]] = {}
        for parts, blob_id in edits.items():
            if len(parts) == 1:
                if blob_id is None:
                    if parts[0] in tree:
                        del tree[parts[0]]
                else:
                    tree.add(parts[0], FILE_MODE, blob_id)
            else:
                nested.setdefault(parts[0], {})[parts[1:]] = blob_id
        for name, sub_edits in nested.items():
            current = tree[name] if name in tree else None
            sub_id = current[1] if current and stat.S_ISDIR(current[0]) else None
            new_sub = self._edit_tree(sub_id, sub_edits)
            if new_sub is None:
                if name in tree:
                    del tree[name]
            else:
                tree.add(name, TREE_MODE, new_sub)
        if not len(tree):
            return None
        self.add_object(tree)
        return tree.id

    def _blob_edits(
        self, edits: Mapping[str, bytes | None]
    ) -> dict[tuple[bytes, ...], bytes | None]:
        """Slash paths -> new bytes (None: delete) as path parts -> written blob ids."""
        blob_edits: dict[tuple[bytes, ...], bytes | None] = {}
        for path, data in edits.items():
            parts = tuple(_b(p) for p in path.split("/") if p)
            if not parts or any(p in (b".", b"..") for p in parts):
                raise GitkbError(f"refusing to write outside the tree: {path!r}")
            blob_edits[parts] = None if data is None else _b(self.write_blob(data))
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
    ) -> str:
        """Write the objects of one commit (no ref moves): ``parent``'s tree with ``edits``.

        ``edits`` maps a slash path to new file bytes, or to None to delete it.
        """
        blob_edits = self._blob_edits(edits)
        base_tree = self.tree_of(parent) if parent else None
        tree_id = self._edit_tree(base_tree, blob_edits) or self._empty_tree()
        committer = identity()
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
