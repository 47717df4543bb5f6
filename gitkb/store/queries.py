"""The index cache's read queries for retrieval (``git kb query``), as named rows.

Only ``gitkb.store`` speaks SQL to the cache; a reader states what it wants as data
(``Narrowing``, a column name, a value) and gets rows back by name. The ranking
fields are columns of their own (``gitkb.store.rows``), so a broad scope costs one
indexed scan and decodes no entry.
"""

from __future__ import annotations

import json

from gitkb.errors import GitkbError
from gitkb.layout import FEEDBACK_DIR
from gitkb.store.cache import IndexCache
from gitkb.valueclass import value_class

# The columns a scope filter names directly (vendor, arch, dsl, family, type).
SCOPE_COLUMNS = ("vendor", "arch", "dsl", "family", "type")
# The entry paths whose values only the entry holds (operators, symptoms, tags).
ENTRY_LISTS = {
    "operator": ("$.retrieval.scope.operators",),
    "symptom": ("$.retrieval.signals.symptoms", "$.retrieval.signals.bottleneck"),
    "tag": ("$.retrieval.technique_tags",),
}
_RANKED = (
    "id, path, type, status, vendor, arch, dsl, family, level, tier, worth, gain, speedup, "
    "architectures, operators, symptoms, bottleneck"
)


@value_class
class RankRow:
    """One record as ranking reads it. The list fields (``architectures``, ``operators``,
    ``symptoms``) stay JSON text until a filter asks for them (``strings``); bit ``i`` of
    ``contains`` says whether the record's retrieval text holds the query's ``i``-th text
    (the text itself stays in the cache)."""

    # One per row a query reads: slots, and an __init__ of its own (the shared one reads
    # its fields by name, which a scope of 10,000 rows would feel).
    __slots__ = ("id", "path", "type", "status", "vendor", "arch", "dsl", "family", "level",
                 "tier", "worth", "gain", "speedup", "architectures", "operators", "symptoms",
                 "bottleneck", "contains")  # fmt: skip
    id: str
    path: str
    type: str | None
    status: str | None
    vendor: str | None
    arch: str | None
    dsl: str | None
    family: str | None
    level: str | None
    tier: str | None
    worth: float | None
    gain: float | None
    speedup: float | None
    architectures: str | None
    operators: str | None
    symptoms: str | None
    bottleneck: str | None
    contains: int

    def __init__(self, id: str, path: str, type: str | None, status: str | None,
                 vendor: str | None, arch: str | None, dsl: str | None, family: str | None,
                 level: str | None, tier: str | None, worth: float | None,
                 gain: float | None, speedup: float | None, architectures: str | None,
                 operators: str | None, symptoms: str | None, bottleneck: str | None,
                 contains: int = 0) -> None:  # fmt: skip
        self.id, self.path, self.type, self.status = id, path, type, status
        self.vendor, self.arch, self.dsl, self.family = vendor, arch, dsl, family
        self.level, self.tier, self.worth, self.gain = level, tier, worth, gain
        self.speedup, self.architectures, self.operators = speedup, architectures, operators
        self.symptoms, self.bottleneck, self.contains = symptoms, bottleneck, contains


def strings(listed: str | None) -> list[str]:
    """A list field of a ``RankRow`` decoded (the strings it holds)."""
    return json.loads(listed) if listed else []


@value_class(frozen=True)
class ArchWanted:
    """Records written for ``arch``: their own arch (under any of ``vendors``, the store's,
    so the (vendor, arch) index answers), or one their scope lists besides. With
    ``kin_vendors``, also those vendors' (or no vendor's) records on ``kin_arch``, or on
    every arch when ``kin_arch`` is None."""

    arch: str
    vendors: tuple[str, ...]
    kin_vendors: tuple[str, ...] = ()
    kin_arch: str | None = None


@value_class(frozen=True)
class Narrowing:
    """What the cache's columns can tell about a scope: a superset of it (the reader decides
    the rest exactly). A tuple field matches any of its values; None or empty: no filter."""

    arch: ArchWanted | None = None
    vendor_in: tuple[str, ...] = ()
    dsl_in: tuple[str, ...] = ()
    family: str | None = None
    kernel: str | None = None  # filed under this kernel name (its operators)
    type: str | None = None
    status: str | None = None
    status_not_in: tuple[str, ...] = ()


def _marks(values: tuple) -> str:
    return ", ".join("?" * len(values))


def _own_arch(vendors: tuple[str, ...], arch: str) -> tuple[str, tuple]:
    """ "The record's arch is ``arch``", spelled so the (vendor, arch) index answers."""
    any_vendor = (
        f"(vendor IN ({_marks(vendors)}) OR vendor IS NULL)" if vendors else ("vendor IS NULL")
    )
    return f"({any_vendor} AND arch = ?)", (*vendors, arch)


def _where(narrowing: Narrowing) -> tuple[str, tuple]:
    where = ["id IS NOT NULL", "entry IS NOT NULL"]
    params: list = []
    wanted = narrowing.arch
    if wanted is not None:
        own, own_params = _own_arch(wanted.vendors, wanted.arch)
        condition = f"({own} OR path IN (SELECT path FROM arches WHERE arch = ?))"
        params += [*own_params, wanted.arch]
        if wanted.kin_vendors:
            kin = f"(vendor IN ({_marks(wanted.kin_vendors)}) OR vendor IS NULL)"
            params += wanted.kin_vendors
            if wanted.kin_arch is not None:
                kin = f"({kin} AND arch = ?)"
                params.append(wanted.kin_arch)
            condition = f"({condition} OR {kin})"
        where.append(condition)
    for column, values in (("vendor", narrowing.vendor_in), ("dsl", narrowing.dsl_in)):
        if values:
            where.append(f"{column} IN ({_marks(values)})")
            params += values
    for column, value in (
        ("family", narrowing.family),
        ("type", narrowing.type),
        ("status", narrowing.status),
    ):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if narrowing.kernel:
        where.append("path IN (SELECT path FROM kernels WHERE name = ?)")
        params.append(narrowing.kernel)
    if narrowing.status_not_in:
        where.append(f"(status IS NULL OR status NOT IN ({_marks(narrowing.status_not_in)}))")
        params += narrowing.status_not_in
    return " AND ".join(where), tuple(params)


def _by_id_and_path(values: tuple) -> tuple:
    return values[0], values[1]


def rank_rows(
    cache: IndexCache,
    narrowing: Narrowing | None,
    texts: tuple[str, ...] = (),
    row_type: type = RankRow,
    holding: tuple[str, ...] = (),
    holding_any: bool = False,
) -> list:
    """The records with an id and an entry that ``narrowing`` may reach (None: all), by id,
    each as ``row_type`` (``RankRow`` or a subclass), its ``contains`` a bit per text (a
    case-sensitive substring test, as Python's ``in``). With ``holding``, only the records
    whose text holds each of those texts (any one, with ``holding_any``)."""
    where, params = _where(narrowing or Narrowing())
    bits = " | ".join(f"((instr(search_text, ?) > 0) << {n})" for n in range(len(texts)))
    if holding:
        tests = " OR ".join if holding_any else " AND ".join
        where = f"{where} AND ({tests('instr(search_text, ?) > 0' for _ in holding)})"
        params = (*params, *holding)
    found = cache.select(
        f"SELECT {_RANKED}, {bits or '0'} FROM records WHERE {where}", (*texts, *params)
    )
    # Sorted here, not by SQL: ORDER BY walks the id index into the table row by row, a
    # scan reads it in order (UTF-8 byte order is code point order: the same sort).
    found.sort(key=_by_id_and_path)
    return [row_type(*values) for values in found]


def record_count(cache: IndexCache) -> int:
    """How many records with an id the snapshot holds."""
    return cache.select("SELECT count(*) FROM records WHERE id IS NOT NULL")[0][0]


def feedback_paths(cache: IndexCache) -> set[str]:
    """The paths of the feedback files the snapshot holds."""
    found = cache.select(
        "SELECT path FROM files WHERE path >= ? AND path < ?",
        (FEEDBACK_DIR + "/", FEEDBACK_DIR + "0"),  # every path under feedback/
    )
    return {row[0] for row in found}


def _column(name: str) -> str:
    if name not in SCOPE_COLUMNS:
        raise GitkbError(f"internal: {name!r} is not a scope column")
    return name


def vendors(cache: IndexCache) -> set[str]:
    """Every vendor value the store holds: one probe of the (vendor, arch, family) index per
    vendor (a skip scan), not a walk of every record's entry in it."""
    found: set[str] = set()
    vendor = cache.select("SELECT min(vendor) FROM records")[0][0]
    while vendor is not None:
        found.add(vendor)
        vendor = cache.select("SELECT min(vendor) FROM records WHERE vendor > ?", (vendor,))[0][0]
    return found


def holds_arch(cache: IndexCache, store_vendors: tuple[str, ...], arch: str) -> bool:
    """Whether some record's own arch is ``arch``."""
    where, params = _own_arch(store_vendors, arch)
    return bool(cache.select(f"SELECT 1 FROM records WHERE {where} LIMIT 1", params))


def holds(cache: IndexCache, name: str, value: str) -> bool:
    """Whether some record with an id has ``value`` in the scope column ``name``."""
    sql = f"SELECT 1 FROM records WHERE {_column(name)} = ? AND id IS NOT NULL LIMIT 1"
    return bool(cache.select(sql, (value,)))


def column_values(cache: IndexCache, name: str) -> set[str]:
    """The non-empty values of the scope column ``name`` over records with an id."""
    column = _column(name)
    found = cache.select(f"SELECT DISTINCT {column} FROM records WHERE id IS NOT NULL "
                         f"AND {column} IS NOT NULL AND {column} != ''")  # fmt: skip
    return {row[0] for row in found}


def entry_values(
    cache: IndexCache, name: str, kernel: str | None = None, containing: str | None = None
) -> set[str]:
    """The strings the entries hold at ``ENTRY_LISTS[name]`` (lists flattened), over every
    record with an id, or only those filed under ``kernel``, or only those whose entry
    text holds ``containing``."""
    paths = ", ".join(f"'{p}'" for p in ENTRY_LISTS[name])
    params: tuple[str, ...] = ()
    where = "1"
    if kernel is not None:
        where, params = "path IN (SELECT path FROM kernels WHERE name = ?)", (kernel,)
    elif containing is not None:
        where, params = "instr(entry, ?) > 0", (containing,)
    found = cache.select(
        f"SELECT json_extract(entry, {paths}) FROM records "
        f"WHERE id IS NOT NULL AND json_valid(entry) AND {where}",
        params,
    )
    out: set[str] = set()
    for (text,) in found:
        for value in json.loads(text) if text else ():
            items = value if isinstance(value, list) else [value]
            out.update(v for v in items if isinstance(v, str) and v)
    return out
