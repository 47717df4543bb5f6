"""What differs between two trees of a repository, and the raw folders a push check reads.

``changes`` and ``tree_changes`` give files as dulwich's diff finds them. A push checked
against the store's layout needs more (``entry_diff``): the folders themselves (an entry
named ``..`` or ``.git`` may be an empty folder), the mode of every entry as written, a
folder entry that is no tree, and two entries of one name in one tree (which git's own
readers take differently). ``entry_changes`` compares one folder's two versions from
their bytes (``gitkb.vcs.objects.tree.changed``), so a folder that gains a file per
commit costs what changed. Identical subtrees are skipped by id, so the cost follows
the change.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeGuard

from dulwich.diff_tree import tree_changes as dulwich_tree_changes

from gitkb.util import log as notes
from gitkb.vcs.objects import Unreadable, tree
from gitkb.vcs.repository import DULWICH_UNREADABLE, Repository

log = notes.logger(__name__)


@dataclass(slots=True, frozen=True)
class PathChange:
    """One path that differs between two commits; ``kind`` is add, modify or delete."""

    kind: str
    path: str
    old_sha: str | None
    new_sha: str | None
    old_mode: int = 0
    new_mode: int = 0

    @property
    def regular(self) -> tuple[bool, bool]:
        """Whether the old and the new side are regular files."""
        return stat.S_ISREG(self.old_mode), stat.S_ISREG(self.new_mode)


@dataclass(slots=True, frozen=True)
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

    def is_dir(self, side: tuple[int, str] | None) -> TypeGuard[tuple[int, str]]:
        return side is not None and stat.S_ISDIR(side[0])


def changes(repo: Repository, old: str | None, new: str, prefix: str = "") -> list[PathChange]:
    """Files under ``prefix`` that differ from commit ``old`` to commit ``new``."""
    old_tree = repo.subtree(old, prefix) if old is not None else None
    return tree_changes(repo, old_tree, repo.subtree(new, prefix), prefix)


def tree_changes(
    repo: Repository, old: str | None, new: str | None, prefix: str = ""
) -> list[PathChange]:
    """Entries that differ from tree ``old`` to tree ``new`` (None: no tree), named
    ``prefix``/path; ``old_mode``/``new_mode`` say whether each side is a regular file,
    a symlink or a submodule (0 where the side has none)."""
    prefix = prefix.strip("/")
    out = []
    trees = [None if t is None else t.encode() for t in (old, new)]
    try:
        found = list(dulwich_tree_changes(repo.object_store, *trees))
    except DULWICH_UNREADABLE as exc:
        raise Unreadable(f"the trees {old} and {new} cannot be compared ({exc})") from None
    for change in found:
        kind = {"add": "add", "delete": "delete"}.get(change.type, "modify")
        entry = change.new if kind != "delete" else change.old
        name = entry.path.decode("utf-8", "surrogateescape")
        out.append(
            PathChange(
                kind=kind,
                path=f"{prefix}/{name}" if prefix else name,
                old_sha=change.old.sha.decode() if change.old and change.old.sha else None,
                new_sha=change.new.sha.decode() if change.new and change.new.sha else None,
                old_mode=(change.old.mode or 0) if change.old else 0,
                new_mode=(change.new.mode or 0) if change.new else 0,
            )
        )
    return out


def entry_changes(
    repo: Repository, old: str | None, new: str | None, prefix: str = ""
) -> list[PathChange]:
    """The direct entries that differ from tree ``old`` to tree ``new`` (None: no tree),
    one level deep (a changed folder is one entry)."""
    before = repo.raw(old) if old is not None else b""
    after = repo.raw(new) if new is not None else b""
    base = prefix.strip("/")
    return [
        PathChange(
            kind="add" if was is None else "delete" if now is None else "modify",
            path=f"{base}/{name}" if base else name,
            old_sha=was[1] if was else None,
            new_sha=now[1] if now else None,
            old_mode=was[0] if was else 0,
            new_mode=now[0] if now else 0,
        )
        for name, (was, now) in tree.changed(before, after).items()
    ]


def entry_diff(repo: Repository, old: str | None, new: str) -> list[EntryChange]:
    """Every entry, folders included, that differs from commit ``old`` (None: none) to
    commit ``new``, with the modes and names as written."""
    old_tree = repo.tree_of(old).decode() if old is not None else None
    return list(walk(repo.raw_tree, old_tree, repo.tree_of(new).decode()))


def walk(
    raw_tree: Callable[[str], bytes], old: str | None, new: str | None, prefix: str = ""
) -> Iterator[EntryChange]:
    """Changes from tree ``old`` to tree ``new`` (None: no tree), every changed entry at
    every depth, each folder before what it holds; ``raw_tree`` reads a tree's body."""
    stack = [(prefix.strip("/"), old, new)]
    while stack:
        base, old_tree, new_tree = stack.pop()
        try:
            before = raw_tree(old_tree) if old_tree else b""
            after = raw_tree(new_tree) if new_tree else b""
            twice = tree.duplicate(after) if new_tree else None
            changed = tree.changed(before, after)
        except Unreadable as exc:
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


def record_folders(
    repo: Repository, commit: str, prefix: str, depth: int
) -> list[tuple[str, bytes]]:
    """(path, raw body) of every tree ``depth`` levels below ``prefix`` at ``commit``:
    the folders that hold the files, unparsed, so a caller can search their bytes."""
    top = repo.subtree(commit, prefix)
    level = [(prefix, top)] if top else []
    for _ in range(depth):
        deeper = []
        for base, sha in level:
            try:
                entries = tree.parse(repo.raw(sha))
            except Unreadable:
                continue
            deeper += [(f"{base}/{name}", sub) for name, (mode, sub) in entries.items()
                       if stat.S_ISDIR(mode)]  # fmt: skip
        level = deeper
    out = []
    for base, sha in level:
        try:
            out.append((base, repo.raw(sha)))
        except Unreadable:
            log.warning("tree %s (%s) is missing from %s", sha, base, repo.git_dir)
    return out
