"""Every entry that differs between two trees, folders included, read from raw objects.

``Repository.changes`` yields files as dulwich reads them; a push checked against
the store's layout needs more: the folders themselves (an entry named ``..`` or
``.git`` may be an empty folder), the mode of every entry as written, a folder entry
that is no tree, and two entries of one name in one tree (which git's own readers
take differently). Identical subtrees are skipped by id, so the cost follows the
change.
"""

from __future__ import annotations

import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitkb.vcs import rawtree

if TYPE_CHECKING:
    from dulwich.object_store import BaseObjectStore

_TREE = 2  # git's object type number of a tree


@dataclass(frozen=True)
class EntryChange:
    """One entry of ``path`` that differs; a side is None where it has no entry there.
    ``problem`` names a tree that cannot be read as one (then the sides say nothing)."""

    path: str
    old: tuple[int, str] | None  # (mode, hex sha)
    new: tuple[int, str] | None
    problem: str = ""

    @property
    def kind(self) -> str:
        return "add" if self.old is None else "delete" if self.new is None else "modify"

    def is_dir(self, side: tuple[int, str] | None) -> bool:
        return side is not None and stat.S_ISDIR(side[0])


def _raw_tree(object_store: BaseObjectStore, sha: str) -> bytes:
    kind, raw = object_store.get_raw(bytes.fromhex(sha) if len(sha) == 20 else sha.encode())
    if kind != _TREE:
        raise rawtree.Malformed(f"{sha} is not a tree")
    return raw


def _duplicate(raw: bytes) -> str | None:
    """A name two entries of the tree share, if any."""
    from dulwich.objects import parse_tree

    names = [name for name, _, _ in parse_tree(raw, 20)]
    if len(set(names)) == len(names):
        return None
    twice = next(n for n, count in Counter(names).items() if count > 1)
    return twice.decode("utf-8", "replace")


def walk(
    object_store: BaseObjectStore, old: str | None, new: str | None, prefix: str = ""
) -> Iterator[EntryChange]:
    """Changes from tree ``old`` to tree ``new`` (None: no tree), every changed entry at
    every depth, each folder before what it holds."""
    stack = [(prefix.strip("/"), old, new)]
    while stack:
        base, old_tree, new_tree = stack.pop()
        try:
            before = _raw_tree(object_store, old_tree) if old_tree else b""
            after = _raw_tree(object_store, new_tree) if new_tree else b""
            twice = _duplicate(after) if new_tree else None
            changed = rawtree.changed(before, after)
        except (rawtree.Malformed, KeyError, ValueError, OSError) as exc:
            yield EntryChange(base or ".", None, None, f"the tree cannot be read ({exc})")
            continue
        if twice is not None:
            yield EntryChange(f"{base}/{twice}" if base else twice, None, None,
                              "two entries of one tree have this name")  # fmt: skip
        for name, (was, now) in sorted(changed.items(), reverse=True):
            path = f"{base}/{name}" if base else name
            change = EntryChange(path, was, now)
            yield change
            if change.is_dir(was) or change.is_dir(now):
                sub_old = was[1] if change.is_dir(was) else None
                sub_new = now[1] if change.is_dir(now) else None
                stack.append((path, sub_old, sub_new))
