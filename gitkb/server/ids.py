"""Which file holds a record id, answered from the trees (a push's id check)."""

from __future__ import annotations

import re

from gitkb import record as rec
from gitkb.vcs import treediff
from gitkb.vcs.objects import tree as raw_tree
from gitkb.vcs.repository import CommitInfo, Repository

# A file entry of a raw tree: mode, space, name, NUL (then 20 bytes of object id).
_FILE_NAME = re.compile(rb"100644 ([^\0/]+)\0")


class IdLookup:
    """Which file holds a record id, answered from the trees: a verdict that no other
    file holds an id never rests on a cache row. The folders of a commit the push did
    not bring are read once; each checked commit adds its records on top of its first
    parent's, so a later commit of the same push sees them."""

    def __init__(self, repo: Repository) -> None:
        self._repo = repo
        # held commit -> its record folders (path, raw tree) and the file names they hold
        self._folders: dict[str, tuple[list[tuple[str, bytes]], set[bytes]]] = {}
        self._added: dict[str, dict[str, str]] = {}  # checked commit -> file name -> path
        self._base: dict[str, str | None] = {}  # checked commit -> the held commit below

    def holder(self, parent: str | None, record_id: str) -> str | None:
        """The path of a file named ``<record_id>.json`` among the records at ``parent``."""
        if parent is None:
            return None
        name = f"{record_id}.json"
        if parent in self._added:
            if name in self._added[parent]:
                return self._added[parent][name]
            parent = self._base[parent]
            if parent is None:
                return None
        if parent not in self._folders:
            folders = treediff.record_folders(self._repo, parent, rec.RECORDS_DIR, 5)
            # Every file name of every folder, found in one C-speed pass over their bytes.
            names = set(_FILE_NAME.findall(b"".join(raw for _, raw in folders)))
            self._folders[parent] = (folders, names)
        folders, names = self._folders[parent]
        if name.encode() not in names:
            return None
        needle = b" " + name.encode() + b"\0"
        for folder, raw in folders:
            if needle in raw and name in raw_tree.parse(raw):
                return f"{folder}/{name}"
        return None

    def note(self, commit: CommitInfo, paths: list[str]) -> None:
        """``commit`` was checked: the records of its first parent and ``paths``."""
        parent = commit.parents[0] if commit.parents else None
        added = dict(self._added.get(parent, {})) if parent else {}
        added.update((path.rsplit("/", 1)[-1], path) for path in paths)
        self._added[commit.sha] = added
        self._base[commit.sha] = self._base.get(parent, parent) if parent else None


def admitting_commit(repo: Repository, tip: str, path: str) -> str:
    """The newest commit on ``tip``'s first-parent line that added ``path`` (runs only for
    a refusal)."""
    current = tip
    while True:
        info = repo.commit(current)
        parent = info.parents[0] if info.parents else None
        if parent is None or repo.blob_sha(parent, path) is None:
            return current
        current = parent
