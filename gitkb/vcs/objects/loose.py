"""Loose objects: one zlib stream per file, ``<type> <size>\\0`` then the body."""

from __future__ import annotations

import zlib

from gitkb.vcs.objects import TYPE_NUMBERS, Unreadable

_SIZE_PROBE = 64  # inflated bytes enough to hold any object header


def parse_loose(raw: bytes, where: str) -> tuple[int, bytes]:
    """(type number, body) of a loose object file's bytes; ``where`` names it in errors."""
    try:
        data = zlib.decompress(raw)
    except zlib.error as exc:
        raise Unreadable(f"loose object {where}: {exc}") from None
    head, nul, body = data.partition(b"\0")
    kind, _, size = head.partition(b" ")
    number = TYPE_NUMBERS.get(kind)
    if not nul or number is None or not size.isdigit() or int(size) != len(body):
        raise Unreadable(f"loose object {where} has no valid header")
    return number, body


def loose_size(path: str) -> int:
    """The size a loose object's header states, inflating the header only (so a caller
    can refuse a huge file unread)."""
    inflater, head = zlib.decompressobj(), b""
    try:
        with open(path, "rb") as fh:
            # A deflate stream may spend its first bytes on Huffman tables: read on until
            # the header's NUL is inflated, never more than the probe.
            while b"\0" not in head and len(head) < _SIZE_PROBE:
                chunk = inflater.unconsumed_tail or fh.read(_SIZE_PROBE)
                if not chunk:
                    break
                head += inflater.decompress(chunk, _SIZE_PROBE - len(head))
    except (OSError, zlib.error) as exc:
        raise Unreadable(f"loose object {path}: {exc}") from None
    kind, _, size = head.partition(b"\0")[0].partition(b" ")
    if b"\0" not in head or kind not in TYPE_NUMBERS or not size.isdigit():
        raise Unreadable(f"loose object {path} has no valid header")
    return int(size)
