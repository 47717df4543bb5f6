"""Packs written from objects held in memory, objects read straight from a pack, and
object sizes read from headers.

A batch of admissions writes its objects as one pack with its index (two files,
not ten loose objects a commit), built from what the writer holds: dulwich's own
``add_objects`` would read the pack back to index it.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import time
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gitkb.errors import GitkbError

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore
    from dulwich.objects import ShaFile
    from dulwich.pack import Pack

PACK_TMP_PREFIX = "tmp_gitkb_pack-"
_PACK_OFS_DELTA, _PACK_REF_DELTA = 6, 7
_SIZE_PROBE = 64  # inflated bytes enough to hold any object or delta header
_NEW_OBJECT_LEVEL = 1  # zlib level of the objects a batch writes (see write_pack)
_STORED_BELOW = 128  # smaller objects are written as a stored zlib block (see deflate)
_DELTA_DEPTH = 50  # longest delta chain a batch writes (git's pack.depth default)
_COPY_MAX = 0xFFFFFF  # the most bytes one delta copy instruction names (3 size bytes)
_BASES_KEPT = 256  # inflated objects kept per pack: the bases of the deltas read next
_BASE_BYTES_KEPT = 1 << 20  # larger objects are not kept
_TABLE_AFTER_SHARE = 8  # see PackedObjects.get
_IDX_NAMES = 8 + 256 * 4  # a v2 index: magic, version, fan-out table, then the names


def deflate(raw: bytes) -> bytes:
    """The zlib stream a batch's pack holds for an object's bytes (``write_pack``).

    Below ``_STORED_BELOW`` bytes (most of a batch's objects: tree deltas, which are
    mostly raw sha bytes) the stream is one stored block: deflating such bytes makes them
    no smaller, and setting up a zlib stream costs several times the copy."""
    size = len(raw)
    if size < _STORED_BELOW:
        # header (deflate, 32 KiB window, fastest), a final stored block, Adler-32
        head = b"\x78\x01\x01" + size.to_bytes(2, "little") + (size ^ 0xFFFF).to_bytes(2, "little")
        return head + raw + zlib.adler32(raw).to_bytes(4, "big")
    return zlib.compress(raw, _NEW_OBJECT_LEVEL)


def write_pack(
    object_store: DiskObjectStore,
    objects: Iterable[ShaFile],
    bases: Mapping[bytes, bytes] | None = None,
    deflated: Mapping[bytes, bytes] | None = None,
) -> None:
    """Store ``objects`` (dulwich ShaFile objects) in ``object_store`` as one pack. The
    index is renamed into place last: until then git and dulwich ignore the pack.

    ``bases`` maps an object's id to the object it replaced (a folder's tree before one
    commit's edit): where that base is earlier in this pack, the object is written as an
    offset delta against it (chains at most ``_DELTA_DEPTH`` long), as git's own packs
    hold successive versions of a tree; a commit changing one entry of a folder of
    thousands then writes a few bytes instead of deflating the whole folder again.
    ``deflated`` maps an object's id to its bytes already deflated (``deflate``).
    Entries are deflated at zlib level 1 (``deflate``): git's own level for new objects
    (``core.looseCompression``), which ``git gc`` later repacks at ``pack.compression``.
    Written here rather than by dulwich's pack writer, whose layers of Python per object
    cost more than the deflating."""
    from dulwich.file import GitFile
    from dulwich.pack import write_pack_index

    objects = list(objects)
    pack_dir = Path(object_store.path) / "pack"
    pack_dir.mkdir(exist_ok=True)
    tmp = pack_dir / f"{PACK_TMP_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
    bases = bases or {}
    deflated = deflated or {}
    based = set(bases.values())
    entries: list[tuple[bytes, int, int]] = []  # (binary sha, offset, crc32)
    written: dict[bytes, tuple[int, int, bytes]] = {}  # base id -> (offset, depth, raw)
    head = b"PACK" + (2).to_bytes(4, "big") + len(objects).to_bytes(4, "big")
    parts = [head]  # the pack's bytes, written and hashed as one
    offset = len(head)
    for obj in objects:
        raw = obj.as_raw_string()
        base = written.get(bases.get(obj.id, b""))
        depth = 0
        if base is not None and base[1] < _DELTA_DEPTH:
            delta = _delta(base[2], raw)
            entry = (
                _entry_header(_PACK_OFS_DELTA, len(delta))
                + _base_distance_bytes(offset - base[0])
                + deflate(delta)
            )
            depth = base[1] + 1
        else:
            body = deflated.get(obj.id)
            entry = _entry_header(obj.type_num, len(raw)) + (body or deflate(raw))
        if obj.id in based:
            written[obj.id] = (offset, depth, raw)
        parts.append(entry)
        entries.append((obj.sha().digest(), offset, zlib.crc32(entry)))
        offset += len(entry)
    data = b"".join(parts)
    checksum = hashlib.sha1(data).digest()
    with GitFile(f"{tmp}.pack", "wb") as fh:
        fh.write(data)
        fh.write(checksum)
    with GitFile(f"{tmp}.idx", "wb") as fh:
        write_pack_index(fh, sorted(entries), checksum)
    final = pack_dir / f"pack-{checksum.hex()}"
    os.replace(f"{tmp}.pack", f"{final}.pack")
    os.replace(f"{tmp}.idx", f"{final}.idx")
    object_store._update_pack_cache()  # dulwich has no public way to see a new pack


def _delta(base: bytes, target: bytes) -> bytes:
    """A git delta making ``target`` from ``base``: their common head and tail copied, the
    bytes between inserted (one edit of a tree is one such span)."""
    limit = min(len(base), len(target))
    head = _common_head(base[:limit], target[:limit])
    rest = limit - head
    tail = _common_tail(base[len(base) - rest :], target[len(target) - rest :])
    out = bytearray(_varint(len(base)) + _varint(len(target)))
    _copy(out, 0, head)
    middle = target[head : len(target) - tail]
    for start in range(0, len(middle), 127):
        chunk = middle[start : start + 127]
        out.append(len(chunk))
        out += chunk
    _copy(out, len(base) - tail, tail)
    return bytes(out)


def _common_head(a: bytes, b: bytes) -> int:
    """How many leading bytes two equally long strings share: the first differing bit of
    their XOR, read as big integers (C all the way; a byte loop in Python would cost more
    than deflating)."""
    differ = int.from_bytes(a, "big") ^ int.from_bytes(b, "big")
    return (len(a) * 8 - differ.bit_length()) // 8


def _common_tail(a: bytes, b: bytes) -> int:
    """How many trailing bytes two equally long strings share (``_common_head`` with the
    last byte most significant)."""
    differ = int.from_bytes(a, "little") ^ int.from_bytes(b, "little")
    return (len(a) * 8 - differ.bit_length()) // 8


def _copy(out: bytearray, offset: int, size: int) -> None:
    """Delta copy instructions for ``size`` bytes of the base from ``offset``."""
    while size > 0:
        step = min(size, _COPY_MAX)
        op, args = 0x80, bytearray()
        for bit, value in enumerate(offset.to_bytes(4, "little")):
            if value:
                op |= 1 << bit
                args.append(value)
        for bit, value in enumerate(step.to_bytes(3, "little")):
            if value:
                op |= 1 << (4 + bit)
                args.append(value)
        out.append(op)
        out += args
        offset, size = offset + step, size - step


def _varint(n: int) -> bytes:
    """A delta header's size: 7 bits a byte, least significant first."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _base_distance_bytes(distance: int) -> bytes:
    """An offset delta's distance back to its base, in git's offset encoding."""
    out = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        out.append(0x80 | (distance & 0x7F))
        distance >>= 7
    return bytes(reversed(out))


def _entry_header(kind: int, size: int) -> bytes:
    """A pack entry's type and inflated size: 3 bits of type, the size 4 bits then 7 a byte."""
    out = bytearray()
    byte = (kind << 4) | (size & 15)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


def object_size(object_store: DiskObjectStore, sha: str) -> int | None:
    """The size of object ``sha`` from its loose-object or pack header, without
    inflating the content (so a caller can refuse a huge file unread); None when absent."""
    key = sha.encode()
    stores = [object_store]
    while stores:
        store = stores.pop(0)
        if getattr(store, "path", None) is not None:
            loose = Path(store.path) / sha[:2] / sha[2:]
            if loose.is_file():
                return _loose_object_size(loose)
        for pack in getattr(store, "packs", ()):
            try:
                offset = pack.index.object_offset(key)
            except KeyError:
                continue
            return _packed_object_size(Path(pack.data.path), offset)
        stores.extend(getattr(store, "alternates", ()))
    return None


def _loose_object_size(path: Path) -> int:
    """The size a loose object's header states (``<type> <size>\\0``), inflating only it."""
    inflater, head = zlib.decompressobj(), b""
    with open(path, "rb") as fh:
        # A deflate stream may spend its first bytes on Huffman tables: read on until the
        # header's NUL is inflated, never more than the probe.
        while b"\0" not in head and len(head) < _SIZE_PROBE:
            chunk = inflater.unconsumed_tail or fh.read(_SIZE_PROBE)
            if not chunk:
                break
            head += inflater.decompress(chunk, _SIZE_PROBE - len(head))
    if b"\0" not in head:
        raise ValueError(f"{path}: no object header")
    return int(head.split(b"\0", 1)[0].split(b" ", 1)[1])


def _packed_object_size(pack_path: Path, offset: int) -> int:
    """The size of the object at ``offset`` in a pack: the entry header's size, or for a
    delta the result size its delta header states (only that header is inflated)."""
    with open(pack_path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(4096)
    byte = data[0]
    kind, size, shift, pos = (byte >> 4) & 7, byte & 15, 4, 1
    while byte & 0x80:
        byte = data[pos]
        size |= (byte & 0x7F) << shift
        shift, pos = shift + 7, pos + 1
    if kind not in (_PACK_OFS_DELTA, _PACK_REF_DELTA):
        return size
    if kind == _PACK_REF_DELTA:
        pos += 20
    else:
        while data[pos] & 0x80:
            pos += 1
        pos += 1
    delta_head = zlib.decompressobj().decompress(data[pos:], _SIZE_PROBE)
    values, value, shift = [], 0, 0
    for byte in delta_head:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            values.append(value)
            if len(values) == 2:  # base size, then result size
                return value
            value, shift = 0, 0
    raise GitkbError(f"{pack_path}: unreadable delta header at offset {offset}")


def _offset_table(index_path: str) -> dict[bytes, int] | None:
    """Binary object id -> pack offset, for every object of a version 2 pack index (what
    git and dulwich write); None for anything else, left to dulwich's own lookup."""
    try:
        with open(index_path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if data[:8] != b"\377tOc\0\0\0\2" or len(data) < _IDX_NAMES:
        return None
    count = int.from_bytes(data[_IDX_NAMES - 4 : _IDX_NAMES], "big")
    small = _IDX_NAMES + 24 * count  # after the names (20 bytes each) and the CRCs (4)
    large = small + 4 * count
    if len(data) < large:
        return None
    names = data[_IDX_NAMES : _IDX_NAMES + 20 * count]
    table = {}
    offsets = struct.unpack_from(f">{count}L", data, small)
    for at, offset in zip(range(0, 20 * count, 20), offsets, strict=True):
        if offset & 0x80000000:  # an index into the table of 8-byte offsets
            where = large + 8 * (offset & 0x7FFFFFFF)
            offset = int.from_bytes(data[where : where + 8], "big")
        table[names[at : at + 20]] = offset
    return table


class NotReadHere(Exception):
    """A pack entry this reader leaves to dulwich (a ref delta, an odd deflate stream)."""


class PackedObjects:
    """The objects of one pack, inflated straight from a read-only mapping of it.

    dulwich reads a packed object through several layers of Python per object; a trace
    read touches every object of the trace once, and this costs a fraction of that.
    Whole objects and offset deltas (what git and gitkb write) are read here; anything
    else raises NotReadHere for the caller to ask dulwich. zlib checks each stream's
    checksum, and the caller checks the object against its id.
    """

    def __init__(self, pack: Pack) -> None:
        self._index = pack.index
        with open(pack.data.path, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._kept: dict[int, tuple[int, bytes]] = {}  # offset -> (type, body), oldest first
        self._lookups: int | None = 0  # searches made in dulwich's index; None: table tried
        self._offsets: dict[bytes, int] | None = None  # binary id -> offset, see get()

    def get(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body) of object ``sha`` (hex); KeyError when the pack lacks it.

        A reader that has looked up an eighth of the pack's objects (a trace read reads
        nearly all of them) reads the index's table of offsets once into a dict: from
        then on a lookup costs a fraction of dulwich's search, and the table cost less
        than the lookups already made."""
        if self._lookups is not None:
            self._lookups += 1
            if self._lookups * _TABLE_AFTER_SHARE >= len(self._index):
                self._offsets, self._lookups = _offset_table(self._index.path), None
        if self._offsets is None:  # not yet, or not an index read here
            return self._at(self._index.object_offset(sha))
        offset = self._offsets.get(bytes.fromhex(sha.decode("ascii")) if len(sha) == 40 else sha)
        if offset is None:
            raise KeyError(sha)
        return self._at(offset)

    def _at(self, offset: int) -> tuple[int, bytes]:
        # One loop, its header and base-distance varints read in place: a trace read
        # comes here for every object of the trace.
        kept, data = self._kept, self._map
        found = kept.get(offset)
        if found is not None:
            return found
        deltas: list[tuple[int, bytes]] = []  # (offset, delta), the requested object first
        while True:
            byte = data[offset]
            kind, size, pos, shift = (byte >> 4) & 7, byte & 15, offset + 1, 4
            while byte & 0x80:
                byte = data[pos]
                size |= (byte & 0x7F) << shift
                shift, pos = shift + 7, pos + 1
            if kind != _PACK_OFS_DELTA:
                if not 1 <= kind <= 4:  # a ref delta, or no object type
                    raise NotReadHere(f"entry of type {kind} at offset {offset}")
                found = (kind, self._inflate(pos, size))
                self._keep(offset, found)
                break
            byte = data[pos]  # the distance back to the base: git's offset varint
            distance, pos = byte & 0x7F, pos + 1
            while byte & 0x80:
                byte = data[pos]
                distance = ((distance + 1) << 7) | (byte & 0x7F)
                pos += 1
            deltas.append((offset, self._inflate(pos, size)))
            offset -= distance
            found = kept.get(offset)
            if found is not None:
                break
        if not deltas:
            return found
        from dulwich.pack import apply_delta  # C, from dulwich._pack

        kind, body = found
        for delta_offset, delta in reversed(deltas):
            body = b"".join(apply_delta(body, delta))
            self._keep(delta_offset, (kind, body))
        return kind, body

    def _inflate(self, pos: int, size: int) -> bytes:
        # zlib's compressBound: a stream git wrote for ``size`` bytes is never longer.
        bound = size + (size >> 12) + (size >> 14) + (size >> 25) + 13
        # One call: zlib raises on a stream cut short, and ignores the entries after it.
        with memoryview(self._map) as view:
            body = zlib.decompress(view[pos : pos + bound], zlib.MAX_WBITS, size + 1)
        if len(body) != size:
            raise NotReadHere(f"deflate stream at offset {pos} is not {size} bytes")
        return body

    def _keep(self, offset: int, found: tuple[int, bytes]) -> None:
        if len(found[1]) > _BASE_BYTES_KEPT:
            return
        self._kept[offset] = found
        if len(self._kept) > _BASES_KEPT:
            del self._kept[next(iter(self._kept))]
