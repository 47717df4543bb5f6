"""Trees as a commit writes them: edited path by path as rows of raw entries, and held
as their bytes inside a batch (``Repository.batch``): the next commit edits the rows,
the pack takes the bytes, and only a reader that looks inside (a path lookup at a
pending commit) has dulwich parse one."""

from __future__ import annotations

import bisect
import hashlib
import stat
from collections.abc import Callable

from dulwich.objects import Tree, TreeEntry

from gitkb.vcs.objects import tree

Row = tuple[bytes, bytes]  # (sort key, the entry's raw bytes)


class RawTree:
    """A tree object as its bytes and sorted (sort key, raw entry) rows."""

    type_num = Tree.type_num
    type_name = Tree.type_name

    def __init__(self, raw: bytes, rows: list[Row]) -> None:
        self.raw = raw
        self.rows = rows
        self.id = hashlib.sha1(b"tree %d\0" % len(raw) + raw).hexdigest().encode()
        self._tree: Tree | None = None

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


def edit_tree(
    rows_of: Callable[[bytes], list[Row]],
    store: Callable[[RawTree, bytes | None], None],
    tree_id: bytes | None,
    edits: dict[tuple[bytes, ...], bytes | None],
) -> bytes | None:
    """Apply edits (path parts -> blob id, or None to delete) to the tree ``tree_id``
    (None: none yet), and return the new tree's id (None: empty). ``rows_of`` reads a
    tree's rows; ``store`` keeps each new tree with the id of the one it replaced.

    A tree is edited as its sorted list of raw entries and written from their bytes: a
    commit changes one entry of a folder of hundreds, and the rest are copied, not
    parsed and serialized again."""
    rows = list(rows_of(tree_id)) if tree_id is not None else []
    nested: dict[bytes, dict[tuple[bytes, ...], bytes | None]] = {}
    for parts, blob_id in edits.items():
        if len(parts) == 1:
            put_row(rows, parts[0], None if blob_id is None else (tree.FILE_MODE, blob_id))
        else:
            nested.setdefault(parts[0], {})[parts[1:]] = blob_id
    for name, sub_edits in nested.items():
        current = find_row(rows, name)
        held = row_entry(rows[current]) if current is not None else None
        sub_id = held[1] if held and stat.S_ISDIR(held[0]) else None
        new_sub = edit_tree(rows_of, store, sub_id, sub_edits)
        put_row(rows, name, None if new_sub is None else (tree.TREE_MODE, new_sub))
    if not rows:
        return None
    written = RawTree(b"".join([row[1] for row in rows]), rows)
    store(written, tree_id)
    return written.id


def sort_key(name: bytes, mode: int) -> bytes:
    """Git orders a tree's entries by name, a folder's name as if it ended in '/'."""
    return name + b"/" if stat.S_ISDIR(mode) else name


def rows_of(raw: bytes) -> list[Row]:
    """(sort key, raw entry) of each entry of a tree's bytes, in the tree's order."""
    rows, position = [], 0
    while position < len(raw):
        name, mode, end = tree.entry_at(raw, position)
        rows.append((sort_key(name, mode), raw[position:end]))
        position = end
    return rows


def row_entry(row: Row) -> tuple[int, bytes]:
    """(mode, hex sha) of one row."""
    raw = row[1]
    return int(raw[: raw.index(b" ")], 8), raw[-tree.SHA_BYTES :].hex().encode()


def find_row(rows: list[Row], name: bytes) -> int | None:
    """Where the entry ``name`` (a file's or a folder's) sits in sorted ``rows``."""
    for key in (name, name + b"/"):
        # (key,) sorts just before the row (key, raw): tuples compare in C, no key function
        at = bisect.bisect_left(rows, (key,))
        if at < len(rows) and rows[at][0] == key:
            return at
    return None


def put_row(rows: list[Row], name: bytes, entry: tuple[int, bytes] | None) -> None:
    """Set (mode, hex sha) as the entry ``name`` in sorted ``rows``; None removes it."""
    at = find_row(rows, name)
    if entry is None:
        if at is not None:
            del rows[at]
        return
    mode, sha = entry
    key = sort_key(name, mode)
    row = (key, b"%o %s\0%s" % (mode, name, bytes.fromhex(sha.decode())))
    if at is not None and rows[at][0] == key:
        rows[at] = row  # the same kind of entry: it keeps its place
        return
    if at is not None:
        del rows[at]
    rows.insert(bisect.bisect_left(rows, (key,)), row)
