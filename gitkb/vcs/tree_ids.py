"""The blob ids a commit's tree holds at given paths, asked of C git, without dulwich.

A reader the index cache answers (``query``, ``list``, ``show``, ``resolve``) checks
what it serves against ``main``'s tree: the cache is a file under the git directory
that anyone can edit, the tree is not. Asking C git costs one short process (a few
milliseconds), where loading dulwich costs more than the whole query: a handful of
paths are named to ``git ls-tree`` (one tree walk each), more through a listing
of their folders. What a commit's tree holds
never changes, so the answers are kept for the commit last asked about (a server
that keeps its store open asks C git once per path and commit).

Where C git is not on PATH or does not answer (an unusual repository), the caller
asks the VCS layer's dulwich side instead (``None`` from here).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

# Past this many paths one listing of their folders beats a walk per path.
_LISTING_FROM = 32


class TreeIds:
    """Blob ids of paths at commits of the repository at ``git_dir``, asked of C git."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._commit: str | None = None
        self._known: dict[str, str | None] = {}  # path -> blob id at ``_commit`` (None: none)

    def blob_ids(self, commit: str, paths: Iterable[str]) -> dict[str, str | None] | None:
        """Path -> the blob id ``commit``'s tree holds there (None: no blob there), for each
        of ``paths``; None when C git cannot answer."""
        if commit != self._commit:
            self._commit, self._known = commit, {}
        wanted = [p for p in dict.fromkeys(paths) if p not in self._known]
        if wanted:
            found = _listed(self.git_dir, commit, wanted)
            if found is None:
                return None
            self._known.update(found)
        return {p: self._known[p] for p in dict.fromkeys(paths)}

    def files_under(self, commit: str, folder: str) -> dict[str, str] | None:
        """Path -> blob id of every regular file under ``folder`` at ``commit``; None when C
        git cannot answer."""
        found = _git(self.git_dir, ["ls-tree", "-r", "-z", "--full-tree", commit, "--", folder])
        return None if found is None else _regular_files(found)


def _git(git_dir: Path, args: list[str], stdin: bytes | None = None) -> bytes | None:
    """C git's stdout for ``args`` on ``git_dir``; None when it is missing or fails."""
    import subprocess  # a reader that serves nothing needs none

    # The repository is named outright; a hook's GIT_DIR must not point elsewhere, while
    # its object directories (a push's quarantine) stay visible.
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    try:
        done = subprocess.run(
            ["git", "--literal-pathspecs", f"--git-dir={git_dir}", *args],
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            env=env,
            check=False,
        )
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def _plain(path: str) -> bool:
    """Whether ``path`` can be asked about as one literal path (a cache row can hold
    anything)."""
    return bool(path) and "\0" not in path and not path.startswith("/")


def _literal(path: str) -> bool:
    """Whether git finds ``path`` when it is named (it resolves ``.`` and ``..``, which an
    entry crafted into an old tree can be called: such a path is found in a listing)."""
    return all(part not in ("", ".", "..") for part in path.split("/"))


def _folder(path: str) -> str:
    """The folder a listing of ``path`` names: its own (a few records' family folders hold
    them all), or its top folder where git would resolve the path's parts."""
    if "/" not in path:
        return path
    return path.rsplit("/", 1)[0] if _literal(path) else path.split("/", 1)[0]


def _listed(git_dir: Path, commit: str, paths: list[str]) -> dict[str, str | None] | None:
    """The regular files at ``paths`` in one ``ls-tree -r``: the paths themselves when they
    are few, else every file in their folders, looked up."""
    asked = [p for p in paths if _plain(p)]
    out: dict[str, str | None] = dict.fromkeys(paths)
    if not asked:
        return out
    few = len(asked) < _LISTING_FROM and all(_literal(p) for p in asked)
    named = asked if few else sorted({_folder(p) for p in asked})
    found = _git(git_dir, ["ls-tree", "-r", "-z", "--full-tree", commit, "--", *named])
    if found is None:
        return None
    listing = _regular_files(found)
    for path in asked:
        out[path] = listing.get(path)
    return out


def _regular_files(listing: bytes) -> dict[str, str]:
    """Path -> blob id of the regular files in ``ls-tree -z`` output (a symlink is a blob
    too; the cache keeps regular files only)."""
    out: dict[str, str] = {}
    for item in listing.split(b"\0"):
        head, tab, name = item.partition(b"\t")
        fields = head.split(b" ")
        if tab and len(fields) == 3 and fields[0] in (b"100644", b"100755"):
            out[name.decode("utf-8", "surrogateescape")] = fields[2].decode()
    return out
