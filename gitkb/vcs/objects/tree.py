"""Tree bodies: the one parser of their entries, and the differences between two versions
of one tree.

An entry is ``<octal mode> <name>\\0`` and 20 bytes of id. A folder that gains a file
per commit (a trace's ``memory/``) makes a full tree diff per commit quadratic: each
commit re-walks every entry. Two versions of such a tree share a long byte-identical
head and tail; both are skipped with C-speed comparisons, and only the entries between
them are parsed, so the Python work follows the change. Bytes that are no tree raise
``Unreadable``.
"""

from __future__ import annotations

from gitkb.vcs.objects import Unreadable

FILE_MODE = 0o100644
TREE_MODE = 0o040000
SHA_BYTES = 20
CHUNK = 4096
# Every mode git writes in a tree, with the space that ends it.
ENTRY_MODES = (b"100644 ", b"100755 ", b"120000 ", b"40000 ", b"160000 ")
_MODE_DIGITS = 7

Entry = tuple[int, str]  # (mode, hex sha)


def entry_at(raw: bytes, position: int) -> tuple[bytes, int, int]:
    """(name, mode, where the next entry starts) of the entry at ``position``; its id is
    the 20 bytes before the next entry."""
    space = raw.find(b" ", position, position + _MODE_DIGITS + 1)
    nul = raw.find(b"\0", space)
    mode = raw[position:space]
    end = nul + 1 + SHA_BYTES
    if space < 0 or nul < 0 or end > len(raw) or not mode.isdigit():
        raise Unreadable(f"no tree entry at byte {position}")
    try:
        return raw[space + 1 : nul], int(mode, 8), end
    except ValueError:  # an 8 or a 9
        raise Unreadable(f"no octal mode at byte {position}") from None


def entries(raw: bytes, start: int = 0, end: int | None = None) -> list[tuple[bytes, int, bytes]]:
    """(name, mode, 20-byte id) of each entry of ``raw[start:end]`` (which must begin and
    end at entry boundaries), in the tree's order."""
    end = len(raw) if end is None else end
    out, position = [], start
    while position < end:
        name, mode, position = entry_at(raw, position)
        out.append((name, mode, raw[position - SHA_BYTES : position]))
    if position != end:
        raise Unreadable(f"a tree entry runs past byte {end}")
    return out


def parse(raw: bytes, start: int = 0, end: int | None = None) -> dict[str, Entry]:
    """Name -> (mode, hex id) of the entries of ``raw[start:end]``; of two entries of one
    name the first, as git's own lookup finds it."""
    found: dict[str, Entry] = {}
    for name, mode, sha in entries(raw, start, end):
        found.setdefault(name.decode("utf-8", "surrogateescape"), (mode, sha.hex()))
    return found


def duplicate(raw: bytes) -> str | None:
    """A name two entries of the tree share, if any."""
    seen: set[bytes] = set()
    for name, _, _ in entries(raw):
        if name in seen:
            return name.decode("utf-8", "replace")
        seen.add(name)
    return None


# ------------------------------------------------------------------ two versions


def changed(old: bytes, new: bytes) -> dict[str, tuple[Entry | None, Entry | None]]:
    """Name -> (old entry, new entry) for every direct entry that differs (None: absent)."""
    if old == new:
        return {}
    head = _common_head(old, new)
    tail = _common_tail(old, new, head)
    try:
        start = _entry_start(new, head)
        old_part, new_part = _differing_entries(old, new, start, tail)
    except Unreadable:
        old_part, new_part = parse(old), parse(new)
    return {
        name: (old_part.get(name), new_part.get(name))
        for name in sorted(set(old_part) | set(new_part))
        if old_part.get(name) != new_part.get(name)
    }


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
    old_part: dict[str, Entry] = {}
    new_part: dict[str, Entry] = {}
    at_old = at_new = start
    zone_old, zone_new = len(old) - tail, len(new) - tail
    while not (
        at_old >= zone_old and at_new >= zone_new and len(old) - at_old == len(new) - at_new
    ):
        left_old, left_new = len(old) - at_old, len(new) - at_new
        if left_old >= left_new and at_old < len(old):
            at_old = _put_entry(old, at_old, old_part)
        if left_new >= left_old and at_new < len(new):
            at_new = _put_entry(new, at_new, new_part)
    return old_part, new_part


def _put_entry(raw: bytes, position: int, part: dict[str, Entry]) -> int:
    name, mode, end = entry_at(raw, position)
    part.setdefault(
        name.decode("utf-8", "surrogateescape"), (mode, raw[end - SHA_BYTES : end].hex())
    )
    return end
