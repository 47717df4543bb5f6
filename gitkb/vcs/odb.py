"""Commits and trees read straight from a repository's object files, with the standard
library alone: loose objects, and packs through their version-2 indexes (whole
objects, offset deltas, ref deltas).

A reader the index cache answers checks a few paths of ``main``'s tree before it
serves them; reading those few objects here costs less than starting C git, let
alone loading dulwich. The object directories are git's: ``objects`` (in the common
directory of a linked work tree), or ``GIT_OBJECT_DIRECTORY`` with
``GIT_ALTERNATE_OBJECT_DIRECTORIES`` (a push's quarantine), and their
``info/alternates``. Anything else (an object not found, an index of another
version, a damaged stream) raises ``Unreadable``: the caller asks the full VCS layer.
"""

from __future__ import annotations

import mmap
import os
import zlib

_TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_OFS_DELTA, _REF_DELTA = 6, 7
_IDX_MAGIC = b"\377tOc\0\0\0\2"
_ALTERNATES_DEPTH = 5  # git's own limit on chained alternates
_CHAIN_MAX = 10_000  # longer delta chains are a damaged pack, not a repository


class Unreadable(Exception):
    """An object this reader cannot give (absent here, or stored in a way it leaves to
    the VCS layer)."""


class ObjectFiles:
    """The objects of the repository at ``git_dir``, read from its object directories."""

    def __init__(self, git_dir: str | os.PathLike[str]) -> None:
        self._dirs = _object_dirs(os.fspath(git_dir))
        self._packs: list[_Pack] | None = None

    def read(self, sha: str) -> tuple[bytes, bytes]:
        """(type, body) of object ``sha`` (40 hex digits)."""
        for folder in self._dirs:
            try:
                with open(os.path.join(folder, sha[:2], sha[2:]), "rb") as fh:
                    raw = fh.read()
            except OSError:
                continue
            return _loose(raw, sha)
        key = bytes.fromhex(sha)
        for pack in self._opened_packs():
            offset = pack.offset(key)
            if offset is not None:
                return pack.at(offset, self)
        raise Unreadable(f"object {sha} is not in {self._dirs[0]}")

    def _opened_packs(self) -> list[_Pack]:
        if self._packs is None:
            found = []
            for folder in self._dirs:
                pack_dir = os.path.join(folder, "pack")
                try:
                    names = os.listdir(pack_dir)
                except OSError:
                    continue
                for name in names:
                    if name.endswith(".idx") and name.startswith("pack-"):
                        found.append(os.path.join(pack_dir, name[: -len(".idx")]))
            # The newest packs first: they hold main's latest trees.
            found.sort(key=_mtime, reverse=True)
            self._packs = [_Pack(path) for path in found]
        return self._packs


def _mtime(path: str) -> float:
    try:
        return os.stat(path + ".idx").st_mtime
    except OSError:
        return 0.0


def _object_dirs(git_dir: str) -> list[str]:
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
    except OSError:
        return
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            _add_with_alternates(os.path.join(folder, line), dirs, depth - 1)


def _loose(raw: bytes, sha: str) -> tuple[bytes, bytes]:
    try:
        data = zlib.decompress(raw)
    except zlib.error as exc:
        raise Unreadable(f"loose object {sha}: {exc}") from None
    head, nul, body = data.partition(b"\0")
    kind, _, size = head.partition(b" ")
    if not nul or not size.isdigit() or int(size) != len(body):
        raise Unreadable(f"loose object {sha} has no valid header")
    return kind, body


class _Pack:
    """One pack and its version-2 index, mapped read-only when first asked."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._idx: mmap.mmap | None = None
        self._data: mmap.mmap | None = None
        self._count = 0

    def offset(self, key: bytes) -> int | None:
        """Where object ``key`` (20 bytes) starts in the pack, or None."""
        idx = self._index()
        first = key[0]
        lo = int.from_bytes(idx[8 + 4 * (first - 1) : 12 + 4 * (first - 1)]) if first else 0
        hi = int.from_bytes(idx[8 + 4 * first : 12 + 4 * first])
        names = 8 + 1024
        while lo < hi:
            mid = (lo + hi) // 2
            at = names + 20 * mid
            name = idx[at : at + 20]
            if name == key:
                return self._offset_of(mid)
            if name < key:
                lo = mid + 1
            else:
                hi = mid
        return None

    def _offset_of(self, i: int) -> int:
        idx, n = self._index(), self._count
        at = 8 + 1024 + 24 * n + 4 * i  # past the names and the CRCs
        value = int.from_bytes(idx[at : at + 4])
        if value & 0x80000000:
            large = 8 + 1024 + 28 * n + 8 * (value & 0x7FFFFFFF)
            value = int.from_bytes(idx[large : large + 8])
        return value

    def _index(self) -> mmap.mmap:
        if self._idx is None:
            self._idx = _mapped(self.path + ".idx")
            if self._idx[:8] != _IDX_MAGIC or len(self._idx) < 8 + 1024:
                raise Unreadable(f"{self.path}.idx is not a version-2 pack index")
            self._count = int.from_bytes(self._idx[8 + 1020 : 8 + 1024])
        return self._idx

    def at(self, offset: int, objects: ObjectFiles) -> tuple[bytes, bytes]:
        """(type, body) of the entry at ``offset``, its delta chain applied."""
        if self._data is None:
            self._data = _mapped(self.path + ".pack")
        data = self._data
        deltas: list[bytes] = []
        for _ in range(_CHAIN_MAX):
            kind, size, pos = _entry_header(data, offset)
            if kind == _OFS_DELTA:
                distance, pos = _base_distance(data, pos)
                deltas.append(_inflate(data, pos, size, self.path))
                offset -= distance
                continue
            if kind == _REF_DELTA:
                base = data[pos : pos + 20].hex()
                deltas.append(_inflate(data, pos + 20, size, self.path))
                kind_name, body = objects.read(base)
            elif kind in _TYPES:
                kind_name, body = _TYPES[kind], _inflate(data, pos, size, self.path)
            else:
                raise Unreadable(f"{self.path}: entry of type {kind} at offset {offset}")
            for delta in reversed(deltas):
                body = apply_delta(body, delta)
            return kind_name, body
        raise Unreadable(f"{self.path}: a delta chain longer than {_CHAIN_MAX}")


def _mapped(path: str) -> mmap.mmap:
    try:
        with open(path, "rb") as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise Unreadable(f"{path}: {exc}") from None


def _entry_header(data: mmap.mmap, offset: int) -> tuple[int, int, int]:
    """(type, inflated size, where the rest starts) of the pack entry at ``offset``."""
    byte = data[offset]
    kind, size, shift, pos = (byte >> 4) & 7, byte & 15, 4, offset + 1
    while byte & 0x80:
        byte = data[pos]
        size |= (byte & 0x7F) << shift
        shift, pos = shift + 7, pos + 1
    return kind, size, pos


def _base_distance(data: mmap.mmap, pos: int) -> tuple[int, int]:
    """An offset delta's distance back to its base (git's varint), and where it ends."""
    byte = data[pos]
    distance, pos = byte & 0x7F, pos + 1
    while byte & 0x80:
        byte = data[pos]
        distance = ((distance + 1) << 7) | (byte & 0x7F)
        pos += 1
    return distance, pos


def _inflate(data: mmap.mmap, pos: int, size: int, where: str) -> bytes:
    # zlib's compressBound: a stream written for ``size`` bytes is never longer.
    bound = size + (size >> 12) + (size >> 14) + (size >> 25) + 13
    inflater = zlib.decompressobj()
    try:
        body = inflater.decompress(data[pos : pos + bound], size + 1)
    except zlib.error as exc:
        raise Unreadable(f"{where}: entry at offset {pos}: {exc}") from None
    if not inflater.eof or len(body) != size:
        raise Unreadable(f"{where}: the entry at offset {pos} is not {size} bytes")
    return body


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        shift, pos = shift + 7, pos + 1
        if not byte & 0x80:
            return value, pos


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """``base`` rebuilt by git's delta format: copies from the base and inserted bytes."""
    try:
        base_size, pos = _varint(delta, 0)
        size, pos = _varint(delta, pos)
        if base_size != len(base):
            raise Unreadable(f"a delta for a base of {base_size} bytes, not {len(base)}")
        out = []
        end = len(delta)
        while pos < end:
            op = delta[pos]
            pos += 1
            if op & 0x80:
                start = length = 0
                for i in range(4):
                    if op & (1 << i):
                        start |= delta[pos] << (8 * i)
                        pos += 1
                for i in range(3):
                    if op & (0x10 << i):
                        length |= delta[pos] << (8 * i)
                        pos += 1
                out.append(base[start : start + (length or 0x10000)])
            elif op:
                out.append(delta[pos : pos + op])
                pos += op
            else:
                raise Unreadable("a delta instruction of 0")
    except IndexError:
        raise Unreadable("a delta cut short") from None
    body = b"".join(out)
    if len(body) != size:
        raise Unreadable(f"a delta gave {len(body)} bytes, not {size}")
    return body
