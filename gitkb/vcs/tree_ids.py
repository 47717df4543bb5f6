"""The blob ids a commit's tree holds at given paths, read from the object files.

A reader the index cache answers (``query``, ``list``, ``show``, ``resolve``) checks
what it serves against ``main``'s tree: the cache is a file anyone can edit, while a
tree is named by its own hash from the commit ``main`` names. Reading the commit
and the trees on the way to a few paths (``gitkb.vcs.objects``) costs a fraction of a
millisecond, where starting C git costs milliseconds and loading dulwich more than
the whole query. What a commit's tree holds never changes, so the trees read are
kept for the commit last asked about (a server that keeps its store open reads each
once per commit).

Where the objects cannot be read here (an unusual repository), the caller asks the
VCS layer's dulwich side instead (``None`` from here).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from gitkb.vcs.objects import COMMIT, TREE, Unreadable
from gitkb.vcs.objects.files import ObjectFiles
from gitkb.vcs.objects.tree import entries

_TREE, _TYPE_BITS, _REGULAR = 0o040000, 0o170000, 0o100000


class TreeIds:
    """Blob ids of paths at commits of the repository at ``git_dir``."""

    def __init__(self, git_dir: str | os.PathLike[str]) -> None:
        self._objects = ObjectFiles(git_dir)
        self._commit: str | None = None
        self._root_tree = ""  # ``_commit``'s tree
        self._trees: dict[str, dict[bytes, tuple[int, str]]] = {}  # tree id -> its entries
        self._known: dict[str, str | None] = {}  # path -> blob id at ``_commit`` (None: none)

    def blob_ids(self, commit: str, paths: Iterable[str]) -> dict[str, str | None] | None:
        """Path -> the blob id of the regular file ``commit``'s tree holds there (None: none
        there), for each of ``paths``; None when the objects cannot be read here."""
        try:
            root = self._root(commit)
            known = self._known
            for path in paths:
                if path not in known:
                    known[path] = self._blob_at(root, path)
            return {path: known[path] for path in paths}
        except Unreadable:
            return None

    def _blob_at(self, root: str, path: str) -> str | None:
        parts = path.split("/")
        if any(part in ("", ".", "..") for part in parts):
            # Not a path to walk: an entry crafted into an old tree can be called
            # ``../x.json``; a listing of the top folder names it as the cache does.
            found = self._listing(root, parts[0])
            return found.get(path)
        tree = root
        for part in parts[:-1]:
            mode, tree = self._entries(tree).get(_name(part), (0, ""))
            if mode != _TREE:
                return None
        mode, blob = self._entries(tree).get(_name(parts[-1]), (0, ""))
        return blob if mode & _TYPE_BITS == _REGULAR else None

    def files_under(self, commit: str, folder: str) -> dict[str, str] | None:
        """Path -> blob id of every regular file under ``folder`` at ``commit``; None when
        the objects cannot be read here."""
        try:
            return self._listing(self._root(commit), folder)
        except Unreadable:
            return None

    def _listing(self, root: str, folder: str) -> dict[str, str]:
        tree = root
        for part in folder.split("/"):
            mode, tree = self._entries(tree).get(_name(part), (0, ""))
            if mode != _TREE:
                return {}
        out: dict[str, str] = {}
        self._walk(tree, folder, out)
        return out

    def _root(self, commit: str) -> str:
        if commit != self._commit:
            kind, body = self._objects.read(commit)
            if kind != COMMIT or not body.startswith(b"tree ") or body[45:46] != b"\n":
                raise Unreadable(f"{commit} is not a commit")
            self._commit, self._root_tree = commit, body[5:45].decode()
            self._trees, self._known = {}, {}
        return self._root_tree

    def _walk(self, tree: str, prefix: str, out: dict[str, str]) -> None:
        for name, (mode, sha) in self._entries(tree).items():
            path = f"{prefix}/{name.decode('utf-8', 'surrogateescape')}"
            if mode == _TREE:
                self._walk(sha, path, out)
            elif mode & _TYPE_BITS == _REGULAR:
                out[path] = sha

    def _entries(self, tree: str) -> dict[bytes, tuple[int, str]]:
        """Name -> (mode, id) of each entry of ``tree`` (the first of a repeated name, as
        git's own lookup finds it)."""
        found = self._trees.get(tree)
        if found is None:
            kind, body = self._objects.read(tree)
            if kind != TREE:
                raise Unreadable(f"{tree} is not a tree")
            found = {}
            for name, mode, sha in entries(body):
                found.setdefault(name, (mode, sha.hex()))
            self._trees[tree] = found
        return found


def _name(part: str) -> bytes:
    return part.encode("utf-8", "surrogateescape")
