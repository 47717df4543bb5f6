"""Packs read through their version-2 indexes: whole objects, offset deltas and ref
deltas, from read-only mappings of the two files.

Both the read verbs (a few objects of ``main``'s tree) and a trace read (every object
of a trace once, most of them deltas) come here. A lookup searches the index's sorted
names in place; once a reader has looked up an eighth of the pack's objects it reads
the index's offsets into one table, which then costs less than the searches already
made. The bases of recent deltas are kept, since a trace's successive versions of a
folder are deltas of each other. Every byte read is checked against the files'
bounds and zlib's checksums: a damaged pack raises ``Unreadable``, never another
error. Object ids are the caller's to check (``gitkb.vcs.repository``), as C git
leaves them to ``fsck``.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Callable

from gitkb.vcs.objects import TYPE_NAMES, Unreadable

OFS_DELTA, REF_DELTA = 6, 7
IDX_MAGIC = b"\377tOc\0\0\0\2"
IDX_NAMES = 8 + 256 * 4  # a v2 index: magic, version, the fan-out table, then the names
_PACK_HEAD = 12  # "PACK", the version, the object count
_TRAILER = 20  # the SHA-1 each file ends with
_TABLE_AFTER_SHARE = 8  # see PackFile.offset
_BASES_KEPT = 256  # inflated objects kept per pack: the bases of the deltas read next
_BASE_BYTES_KEPT = 1 << 20  # larger objects are not kept
_SIZE_PROBE = 64  # inflated bytes enough to hold a delta's two size headers

# (base body, delta) -> the body the delta makes; raises Unreadable for a bad delta.
DeltaApplier = Callable[[bytes, bytes], bytes]
# A ref delta's base, by binary id: (type number, body).
BaseReader = Callable[[bytes], tuple[int, bytes]]


def _mapped(path: str) -> mmap.mmap:
    try:
        with open(path, "rb") as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        raise Unreadable(f"{path}: {exc}") from None


class PackFile:
    """One pack (``path`` without its ``.pack``/``.idx`` suffix), mapped when first read."""

    def __init__(self, path: str, apply: DeltaApplier | None = None) -> None:
        self.path = path
        self._apply = apply or apply_delta
        self._idx: mmap.mmap | None = None
        self._data: mmap.mmap | None = None
        self._count = 0
        self._lookups: int | None = 0  # searches made in the index; None: table read
        self._offsets: dict[bytes, int] | None = None  # binary id -> offset
        self._kept: dict[int, tuple[int, bytes]] = {}  # offset -> (type, body), oldest first

    def close(self) -> None:
        for mapped in (self._idx, self._data):
            if mapped is not None:
                mapped.close()
        self._idx = self._data = None

    # ------------------------------------------------------------------ the index

    def _index(self) -> mmap.mmap:
        if self._idx is None:
            idx = _mapped(self.path + ".idx")
            if idx[:8] != IDX_MAGIC or len(idx) < IDX_NAMES + 2 * _TRAILER:
                idx.close()
                raise Unreadable(f"{self.path}.idx is not a version-2 pack index")
            count = int.from_bytes(idx[IDX_NAMES - 4 : IDX_NAMES], "big")
            if len(idx) < IDX_NAMES + 28 * count + 2 * _TRAILER:
                idx.close()
                raise Unreadable(f"{self.path}.idx is cut short ({count} objects)")
            self._idx, self._count = idx, count
        return self._idx

    def __len__(self) -> int:
        self._index()
        return self._count

    def offset(self, key: bytes) -> int | None:
        """Where object ``key`` (20 bytes) starts in the pack, or None when not here."""
        if self._lookups is not None:
            self._lookups += 1
            if self._lookups * _TABLE_AFTER_SHARE >= len(self):
                self._offsets, self._lookups = self._offset_table(), None
        if self._offsets is not None:
            return self._offsets.get(key)
        idx, count = self._index(), self._count
        first = key[0]
        at = 8 + 4 * first
        lo = int.from_bytes(idx[at - 4 : at], "big") if first else 0
        hi = min(int.from_bytes(idx[at : at + 4], "big"), count)
        while lo < hi:
            mid = (lo + hi) // 2
            start = IDX_NAMES + 20 * mid
            name = idx[start : start + 20]
            if name == key:
                return self._offset_of(mid)
            if name < key:
                lo = mid + 1
            else:
                hi = mid
        return None

    def _offset_of(self, i: int) -> int:
        idx, count = self._index(), self._count
        at = IDX_NAMES + 24 * count + 4 * i  # past the names and the CRCs
        value = int.from_bytes(idx[at : at + 4], "big")
        if value & 0x80000000:  # an index into the table of 8-byte offsets
            large = IDX_NAMES + 28 * count + 8 * (value & 0x7FFFFFFF)
            if large + 8 > len(idx) - 2 * _TRAILER:
                raise Unreadable(f"{self.path}.idx: a large offset past its table")
            value = int.from_bytes(idx[large : large + 8], "big")
        return value

    def _offset_table(self) -> dict[bytes, int]:
        idx, count = self._index(), self._count
        names = idx[IDX_NAMES : IDX_NAMES + 20 * count]
        offsets = struct.unpack_from(f">{count}L", idx, IDX_NAMES + 24 * count)
        table = {}
        for at, value in zip(range(0, 20 * count, 20), offsets, strict=True):
            if value & 0x80000000:
                value = self._offset_of(at // 20)
            table[names[at : at + 20]] = value
        return table

    # ------------------------------------------------------------------ the entries

    def _pack(self) -> mmap.mmap:
        if self._data is None:
            data = _mapped(self.path + ".pack")
            if (
                len(data) < _PACK_HEAD + _TRAILER
                or data[:4] != b"PACK"
                or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3")
            ):
                data.close()
                raise Unreadable(f"{self.path}.pack is not a version 2 or 3 pack")
            self._data = data
        return self._data

    def read_at(self, offset: int, base_of: BaseReader) -> tuple[int, bytes]:
        """(type number, body) of the entry at ``offset``, its delta chain applied (a ref
        delta's base read through ``base_of``)."""
        try:
            return self._read_at(offset, base_of)
        except (IndexError, OverflowError, MemoryError):
            raise Unreadable(f"{self.path}.pack: the entry at {offset} runs past its end") from None

    def _read_at(self, offset: int, base_of: BaseReader) -> tuple[int, bytes]:
        kept, data = self._kept, self._pack()
        found = kept.get(offset)
        if found is not None:
            return found
        end = len(data) - _TRAILER
        deltas: list[tuple[int, bytes]] = []  # (offset, delta), the requested object first
        while True:
            if not _PACK_HEAD <= offset < end:
                raise Unreadable(f"{self.path}.pack: no entry at offset {offset}")
            kind, size, pos = _entry_header(data, offset)
            if kind == OFS_DELTA:
                distance, pos = _base_distance(data, pos)
                deltas.append((offset, self._inflate(pos, size)))
                if not 0 < distance <= offset - _PACK_HEAD:
                    raise Unreadable(f"{self.path}.pack: a delta at {offset} has no base")
                offset -= distance  # always back: the chain ends
                found = kept.get(offset)
                if found is not None:
                    break
            elif kind == REF_DELTA:
                deltas.append((offset, self._inflate(pos + 20, size)))
                found = base_of(data[pos : pos + 20])
                break
            elif kind in TYPE_NAMES:
                found = (kind, self._inflate(pos, size))
                self._keep(offset, found)
                break
            else:
                raise Unreadable(f"{self.path}.pack: an entry of type {kind} at {offset}")
        kind, body = found
        for delta_offset, delta in reversed(deltas):
            body = self._apply(body, delta)
            self._keep(delta_offset, (kind, body))
        return kind, body

    def _inflate(self, pos: int, size: int) -> bytes:
        # zlib's compressBound: a stream written for ``size`` bytes is never longer.
        bound = size + (size >> 12) + (size >> 14) + (size >> 25) + 13
        with memoryview(self._pack()) as view:
            stream = view[pos : pos + bound]
            try:
                if size < _BASE_BYTES_KEPT:
                    # One call; zlib raises on a stream cut short, ignores what follows.
                    body = zlib.decompress(stream, zlib.MAX_WBITS, size + 1)
                else:  # never more than ``size`` + 1 bytes held, whatever the stream says
                    inflater = zlib.decompressobj()
                    body = inflater.decompress(stream, size + 1)
                    if not inflater.eof:
                        raise zlib.error("the stream is cut short")
            except zlib.error as exc:
                raise Unreadable(f"{self.path}.pack: the entry at {pos}: {exc}") from None
            finally:
                stream.release()
        if len(body) != size:
            raise Unreadable(f"{self.path}.pack: the entry at {pos} is not {size} bytes")
        return body

    def _keep(self, offset: int, found: tuple[int, bytes]) -> None:
        if len(found[1]) > _BASE_BYTES_KEPT:
            return
        self._kept[offset] = found
        if len(self._kept) > _BASES_KEPT:
            del self._kept[next(iter(self._kept))]

    def size_at(self, offset: int) -> int:
        """The size of the object at ``offset``: the entry header's, or for a delta the
        result size its delta header states (only that header is inflated)."""
        data = self._pack()
        try:
            kind, size, pos = _entry_header(data, offset)
            if kind not in (OFS_DELTA, REF_DELTA):
                return size
            pos = pos + 20 if kind == REF_DELTA else _base_distance(data, pos)[1]
            head = zlib.decompressobj().decompress(data[pos : pos + 4096], _SIZE_PROBE)
            return _varint(head, _varint(head, 0)[1])[0]
        except (IndexError, zlib.error):
            raise Unreadable(f"{self.path}.pack: no delta header at offset {offset}") from None


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


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A delta header's size (7 bits a byte, least significant first), and where it ends."""
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
        end, made = len(delta), 0
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
                length = length or 0x10000
                if start + length > base_size:
                    raise Unreadable("a delta copies past the end of its base")
                out.append(base[start : start + length])
            elif op:
                if pos + op > end:
                    raise Unreadable("a delta inserts past its own end")
                out.append(delta[pos : pos + op])
                pos, length = pos + op, op
            else:
                raise Unreadable("a delta instruction of 0")
            made += length
            if made > size:  # never build more than the delta says it makes
                raise Unreadable(f"a delta makes more than the {size} bytes it states")
    except IndexError:
        raise Unreadable("a delta cut short") from None
    body = b"".join(out)
    if len(body) != size:
        raise Unreadable(f"a delta gave {len(body)} bytes, not {size}")
    return body
