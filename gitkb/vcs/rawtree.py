"""Differences between two versions of one tree object, read from their raw bytes.

A folder that gains a file per commit (a trace's ``memory/``) makes a full tree diff per
commit quadratic: each commit re-walks every entry. Two versions of such a tree share a
long byte-identical head and tail; both are skipped with C-speed comparisons, and only
the entries between them are parsed, so the Python work follows the change.
"""

from __future__ import annotations

import re

CHUNK = 4096
SHA_BYTES = 20
# Every mode git writes in a tree, with the space that ends it.
ENTRY_MODES = (b"100644 ", b"100755 ", b"120000 ", b"40000 ", b"160000 ")
# An entry: its octal mode (up to 7 digits) and a space, its name up to a NUL; 20 bytes of
# id follow. One match in C where finding each part in Python cost most of a tree read.
_ENTRY = re.compile(rb"(\d{1,7}) ([^\0]*)\0")

Entry = tuple[int, str]  # (mode, hex sha)


class Malformed(ValueError):
    """The bytes are not a tree object's body."""


def parse(raw: bytes, start: int = 0, end: int | None = None) -> dict[str, Entry]:
    """The entries of ``raw[start:end]`` (which must begin and end at entry boundaries)."""
    end = len(raw) if end is None else end
    entries, position = {}, start
    while position < end:
        name, entry, position = _entry(raw, position)
        entries[name] = entry
    return entries


def changed(old: bytes, new: bytes) -> dict[str, tuple[Entry | None, Entry | None]]:
    """Name -> (old entry, new entry) for every direct entry that differs (None: absent)."""
    if old == new:
        return {}
    head = _common_head(old, new)
    tail = _common_tail(old, new, head)
    try:
        start = _entry_start(new, head)
        old_part, new_part = _differing_entries(old, new, start, tail)
    except Malformed:
        old_part, new_part = parse(old), parse(new)
    return {
        name: (old_part.get(name), new_part.get(name))
        for name in sorted(set(old_part) | set(new_part))
        if old_part.get(name) != new_part.get(name)
    }


def _entry(raw: bytes, position: int) -> tuple[str, Entry, int]:
    found = _ENTRY.match(raw, position)
    if found is None or found.end() + SHA_BYTES > len(raw):
        raise Malformed(f"no tree entry at byte {position}")
    end = found.end()  # where the entry's id begins
    name = found.group(2).decode("utf-8", "surrogateescape")
    return name, (int(found.group(1), 8), raw[end : end + SHA_BYTES].hex()), end + SHA_BYTES


def _common_head(a: bytes, b: bytes) -> int:
    # Chunks double while they match, then a binary search inside the one that does not:
    # a few comparisons however long the shared part, each copying one side only.
    limit = min(len(a), len(b))
    low, step = 0, CHUNK
    while low + step <= limit:
        if not b.startswith(a[low : low + step], low):
            break
        low, step = low + step, step * 2
    high = min(low + step, limit)  # the first difference is in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if b.startswith(a[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low


def _common_tail(a: bytes, b: bytes, head: int) -> int:
    """Length of the common tail that does not overlap the common head."""
    limit = min(len(a), len(b)) - head
    low, step = 0, CHUNK
    while low + step <= limit:
        if not b.endswith(a[len(a) - low - step : len(a) - low], 0, len(b) - low):
            break
        low, step = low + step, step * 2
    high = min(low + step, limit)
    while low < high:
        middle = (low + high + 1) // 2
        if b.endswith(a[len(a) - middle : len(a) - low], 0, len(b) - low):
            low = middle
        else:
            high = middle - 1
    return low


def _entry_start(raw: bytes, limit: int) -> int:
    """The start of the entry that holds byte ``limit`` (or starts there). The bytes before
    ``limit`` are shared by both versions, so the boundary is a boundary of both."""
    position = limit
    while True:
        nul = raw.rfind(b"\0", 0, position)
        if nul < 0:
            return 0
        start = nul + 1 + SHA_BYTES
        if start <= limit and (start == len(raw) or raw.startswith(ENTRY_MODES, start)):
            return start
        position = nul


def _differing_entries(
    old: bytes, new: bytes, start: int, tail: int
) -> tuple[dict[str, Entry], dict[str, Entry]]:
    """Parse both versions from ``start`` until what is left of each is the same common
    tail (the same length of it, hence the same bytes)."""
    old_part, new_part = {}, {}
    at_old = at_new = start
    zone_old, zone_new = len(old) - tail, len(new) - tail
    while not (
        at_old >= zone_old and at_new >= zone_new and len(old) - at_old == len(new) - at_new
    ):
        left_old, left_new = len(old) - at_old, len(new) - at_new
        if left_old >= left_new and at_old < len(old):
            name, entry, at_old = _entry(old, at_old)
            old_part[name] = entry
        if left_new >= left_old and at_new < len(new):
            name, entry, at_new = _entry(new, at_new)
            new_part[name] = entry
    return old_part, new_part
