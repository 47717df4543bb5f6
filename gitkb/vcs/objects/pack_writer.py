"""Packs written from objects held in memory, with their version-2 indexes.

A batch of admissions writes its objects as one pack with its index (two files, not
ten loose objects a commit), built from what the writer holds: a pack writer that
reads its pack back to index it, or layers Python per object, costs more than the
deflating.
"""

from __future__ import annotations

import hashlib
import os
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from gitkb.vcs.objects.pack import IDX_MAGIC, OFS_DELTA

_NEW_OBJECT_LEVEL = 1  # zlib level of the objects a batch writes (see write_pack)
_STORED_BELOW = 128  # smaller objects are written as a stored zlib block (see deflate)
_DELTA_DEPTH = 50  # longest delta chain a batch writes (git's pack.depth default)
_COPY_MAX = 0xFFFFFF  # the most bytes one delta copy instruction names (3 size bytes)
_SMALL_OFFSET = 0x80000000  # offsets from here on sit in the index's 8-byte table


class PackableObject(Protocol):
    """What a pack entry is written from (a dulwich object, or a tree held as bytes)."""

    @property
    def id(self) -> bytes: ...  # 40 hex digits

    @property
    def type_num(self) -> int: ...

    def as_raw_string(self) -> bytes: ...


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
    pack_dir: Path,
    objects: Iterable[PackableObject],
    bases: Mapping[bytes, bytes] | None = None,
    deflated: Mapping[bytes, bytes] | None = None,
) -> Path:
    """Store ``objects`` in ``pack_dir`` as one pack and its index, and return the pack's
    path without its suffix. The index is renamed into place last: until then git and
    dulwich ignore the pack.

    ``bases`` maps an object's id to the object it replaced (a folder's tree before one
    commit's edit): where that base is earlier in this pack, the object is written as an
    offset delta against it (chains at most ``_DELTA_DEPTH`` long), as git's own packs
    hold successive versions of a tree; a commit changing one entry of a folder of
    thousands then writes a few bytes instead of deflating the whole folder again.
    ``deflated`` maps an object's id to its bytes already deflated (``deflate``).
    Entries are deflated at zlib level 1 (``deflate``): git's own level for new objects
    (``core.looseCompression``), which ``git gc`` later repacks at ``pack.compression``."""
    objects = list(objects)
    pack_dir.mkdir(exist_ok=True)
    # Temporaries named as git names its own (no .pack/.idx suffix, a tmp_ prefix): a
    # writer killed mid-write leaves a file git neither opens as a pack nor keeps.
    tmp = f"{os.getpid()}-{time.monotonic_ns()}"
    tmp_pack, tmp_idx = pack_dir / f"tmp_pack_gitkb_{tmp}", pack_dir / f"tmp_idx_gitkb_{tmp}"
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
            delta = make_delta(base[2], raw)
            entry = (
                _entry_header(OFS_DELTA, len(delta))
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
        entries.append((bytes.fromhex(obj.id.decode("ascii")), offset, zlib.crc32(entry)))
        offset += len(entry)
    data = b"".join(parts)
    checksum = hashlib.sha1(data).digest()
    with open(tmp_pack, "xb") as fh:
        fh.write(data)
        fh.write(checksum)
    with open(tmp_idx, "xb") as fh:
        fh.write(pack_index(sorted(entries), checksum))
    final = pack_dir / f"pack-{checksum.hex()}"
    os.replace(tmp_pack, f"{final}.pack")
    os.replace(tmp_idx, f"{final}.idx")
    return final


def pack_index(entries: Sequence[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """A version-2 index of (binary id, offset, crc32) ``entries``, sorted by id."""
    fanout, at = bytearray(), 0
    for first in range(256):
        while at < len(entries) and entries[at][0][0] == first:
            at += 1
        fanout += at.to_bytes(4, "big")
    small, large = bytearray(), bytearray()
    for _, offset, _ in entries:
        if offset < _SMALL_OFFSET:
            small += offset.to_bytes(4, "big")
        else:
            small += (_SMALL_OFFSET | len(large) // 8).to_bytes(4, "big")
            large += offset.to_bytes(8, "big")
    body = b"".join(
        [
            IDX_MAGIC,
            fanout,
            *(sha for sha, _, _ in entries),
            *(crc.to_bytes(4, "big") for _, _, crc in entries),
            small,
            large,
            pack_checksum,
        ]
    )
    return body + hashlib.sha1(body).digest()


def make_delta(base: bytes, target: bytes) -> bytes:
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
