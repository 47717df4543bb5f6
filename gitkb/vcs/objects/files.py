"""One lookup over a repository's object directories: its packs, then its loose objects.

The directories are git's: ``objects`` (in the common directory of a linked work tree),
or ``GIT_OBJECT_DIRECTORY`` with ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` (a push's
quarantine), and their ``info/alternates``. A pack written after the first read is
found by looking in the pack folders again when an object is not found, as git does.
"""

from __future__ import annotations

import os

from gitkb.vcs.objects import Unreadable
from gitkb.vcs.objects.loose import loose_size, parse_loose
from gitkb.vcs.objects.pack import DeltaApplier, PackFile

_ALTERNATES_DEPTH = 5  # git's own limit on chained alternates
_REF_DELTA_DEPTH = 100  # deeper chains of ref deltas are left to another reader


class ObjectFiles:
    """The objects of the repository at ``git_dir``, read from its object directories.

    ``apply`` applies a delta (the standard library's reading by default; the repository
    passes dulwich's, in C). Ids are not checked here: ``Repository`` checks what it
    reads, and the read verbs check what the index cache serves against the blob ids
    found here."""

    def __init__(
        self,
        git_dir: str | os.PathLike[str],
        apply: DeltaApplier | None = None,
        listed: list[str] | None = None,
    ) -> None:
        """``listed``: the object directories to read (their alternates followed), in
        place of those git finds for ``git_dir`` and the environment."""
        if listed is None:
            self.dirs = object_dirs(os.fspath(git_dir))
        else:
            self.dirs = []
            for folder in listed:
                _add_with_alternates(folder, self.dirs, _ALTERNATES_DEPTH)
        self._apply = apply
        self._packs: dict[str, PackFile] | None = None  # path -> pack, newest first
        self._depth = 0  # ref deltas being followed
        self._damaged: dict[str, str] = {}  # pack path -> why its index cannot be read

    def read(self, sha: str) -> tuple[int, bytes]:
        """(type number, body) of object ``sha`` (40 hex digits)."""
        key = _key(sha)
        return self._read(key, key.hex())  # the loose file is named in lower case

    def _read(self, key: bytes, sha: str) -> tuple[int, bytes]:
        pack, offset = self._find(key)
        if pack is not None:
            return pack.read_at(offset, self._base)
        for folder in self.dirs:
            path = os.path.join(folder, sha[:2], sha[2:])
            try:
                with open(path, "rb") as fh:
                    raw = fh.read()
            except OSError:
                continue
            return parse_loose(raw, path)
        pack, offset = self._find(key, fresh=True)
        if pack is not None:
            return pack.read_at(offset, self._base)
        raise self._absent(sha)

    def _absent(self, sha: str) -> Unreadable:
        """Object ``sha`` was found nowhere: a pack index passed over may hold it."""
        if self._damaged:
            return Unreadable(
                f"{self.dirs[0]} is damaged: a pack index cannot be read "
                f"({next(iter(self._damaged.values()))}); `git fsck` names the pack"
            )
        return Unreadable(f"object {sha} is not in {self.dirs[0]}", elsewhere=True)

    def _find(self, key: bytes, fresh: bool = False) -> tuple[PackFile | None, int]:
        """The pack that holds ``key`` and where; a pack whose index cannot be read is
        passed over (another may hold the object, as git reads on past it)."""
        for pack in self._opened_packs(fresh):
            try:
                offset = pack.offset(key)
            except Unreadable as exc:
                self._damaged[pack.path] = str(exc)
                continue
            if offset is not None:
                return pack, offset
        return None, 0

    def _base(self, key: bytes) -> tuple[int, bytes]:
        """A ref delta's base, read as any object (it may sit in another pack)."""
        if self._depth >= _REF_DELTA_DEPTH:
            raise Unreadable(f"a chain of ref deltas deeper than {_REF_DELTA_DEPTH}", True)
        self._depth += 1
        try:
            return self._read(key, key.hex())
        finally:
            self._depth -= 1

    def size(self, sha: str) -> int:
        """The size of object ``sha`` from its pack or loose-object header, without
        inflating its body (so a caller can refuse a huge file unread)."""
        key = _key(sha)
        for fresh in (False, True):
            pack, offset = self._find(key, fresh)
            if pack is not None:
                return pack.size_at(offset)
            for folder in self.dirs:
                path = os.path.join(folder, sha[:2], sha[2:])
                if os.path.isfile(path):
                    return loose_size(path)
        raise self._absent(sha)

    def close(self) -> None:
        """Unmap the packs read (the next read maps them again)."""
        if self._packs is not None:
            for pack in self._packs.values():
                pack.close()
        self._packs = None

    def _opened_packs(self, fresh: bool) -> list[PackFile]:
        """The packs found at the first read; with ``fresh``, those written since too (an
        empty list when there are none, so an absent object costs one more listing)."""
        if self._packs is not None and not fresh:
            return list(self._packs.values())
        found = []
        for folder in self.dirs:
            pack_dir = os.path.join(folder, "pack")
            try:
                names = os.listdir(pack_dir)
            except OSError:
                continue
            # Every index, as git reads them (``git pack-objects`` names its own prefix).
            found += [os.path.join(pack_dir, name[: -len(".idx")]) for name in names
                      if name.endswith(".idx")]  # fmt: skip
        known = self._packs or {}
        if self._packs is not None and set(found) <= set(known):
            return []  # nothing new: the packs were asked already
        # The newest packs first: they hold main's latest trees.
        found.sort(key=_mtime, reverse=True)
        self._packs = {path: known.get(path) or PackFile(path, self._apply) for path in found}
        return [pack for path, pack in self._packs.items() if path not in known]


def _key(sha: str) -> bytes:
    """The 20 bytes of a 40-hex-digit id."""
    try:
        key = bytes.fromhex(sha)
    except ValueError:
        key = b""
    if len(key) != 20:
        raise Unreadable(f"{sha!r} is not an object id")
    return key


def _mtime(path: str) -> float:
    try:
        return os.stat(path + ".idx").st_mtime
    except OSError:
        return 0.0


def object_dirs(git_dir: str) -> list[str]:
    """git's object directories for ``git_dir``, the primary one first."""
    common = git_dir
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
            common = os.path.join(git_dir, fh.read().strip())
    except OSError:
        pass
    primary = os.environ.get("GIT_OBJECT_DIRECTORY") or os.path.join(common, "objects")
    listed = [
        primary,
        *filter(None, os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES", "").split(":")),
    ]
    dirs: list[str] = []
    for folder in listed:
        _add_with_alternates(folder, dirs, _ALTERNATES_DEPTH)
    return dirs


def _add_with_alternates(folder: str, dirs: list[str], depth: int) -> None:
    if folder in dirs or depth == 0:
        return
    dirs.append(folder)
    try:
        with open(os.path.join(folder, "info", "alternates"), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            _add_with_alternates(os.path.join(folder, line), dirs, depth - 1)
