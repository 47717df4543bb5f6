"""The store's own values for each scope filter, read from the index cache: whether a
value is held (one indexed probe where a column answers) and every value (for a miss's
near misses and ``--list-*``)."""

from __future__ import annotations

from gitkb.errors import GitkbError
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.cache.sql import holds_signal, list_holds, own_arch

# The columns a scope filter names directly (vendor, arch, dsl, family, type).
SCOPE_COLUMNS = ("vendor", "arch", "dsl", "family", "type")
# The filters whose values a record lists -> the JSON text column it lists them in
# (``rows._strings``): its scope's operators and its recorded symptoms (which a scope
# tests; a symptom may also be its bottleneck), its technique tags, and the names its
# canonical technique is found by (``rows._technique``: derived under the vocabulary).
LIST_COLUMNS = {"operator": "operators", "symptom": "symptoms", "tag": "tags",
                "technique": "techniques"}  # fmt: skip


def _column(name: str) -> str:
    if name not in SCOPE_COLUMNS:
        raise GitkbError(f"internal: {name!r} is not a scope column")
    return name


def vendors(cache: IndexCache) -> frozenset[str]:
    """Every vendor value the store holds: one probe of the (vendor, arch, family) index per
    vendor (a skip scan), not a walk of every record's entry in it."""

    def found() -> frozenset[str]:
        held: set[str] = set()
        vendor = cache.select("SELECT min(vendor) FROM records")[0][0]
        while vendor is not None:
            held.add(vendor)
            vendor = cache.select("SELECT min(vendor) FROM records WHERE vendor > ?", (vendor,))
            vendor = vendor[0][0]
        return frozenset(held)

    return cache.remembered(("vendors",), found)


def holds_arch(cache: IndexCache, store_vendors: tuple[str, ...], arch: str) -> bool:
    """Whether some record's own arch is ``arch``."""
    where, params = own_arch(store_vendors, arch)
    sql = f"SELECT 1 FROM records WHERE {where} LIMIT 1"
    return cache.remembered(("holds_arch", params), lambda: bool(cache.select(sql, params)))


def holds(cache: IndexCache, name: str, value: str) -> bool:
    """Whether some record with an id has ``value`` in the scope column ``name``."""
    sql = f"SELECT 1 FROM records WHERE {_column(name)} = ? AND id IS NOT NULL LIMIT 1"
    return cache.remembered(("holds", name, value), lambda: bool(cache.select(sql, (value,))))


def column_values(cache: IndexCache, name: str) -> set[str]:
    """The non-empty values of the scope column ``name`` over records with an id."""
    column = _column(name)
    found = cache.select(f"SELECT DISTINCT {column} FROM records WHERE id IS NOT NULL "
                         f"AND {column} IS NOT NULL AND {column} != ''")  # fmt: skip
    return {row[0] for row in found}


def _list_column(name: str) -> str:
    if name not in LIST_COLUMNS:
        raise GitkbError(f"internal: {name!r} is not a listed filter")
    return LIST_COLUMNS[name]


def holds_listed(cache: IndexCache, name: str, value: str) -> bool:
    """Whether some record with an id lists ``value`` for the filter ``name`` (one of
    ``LIST_COLUMNS``), as that filter's scope test reads it."""
    column = _list_column(name)
    if name == "symptom":
        where, params = holds_signal(value)
    else:
        where, params = list_holds(column, value)
    if name == "operator":
        # the kernels table files a record under each operator it lists: an indexed superset
        where = f"path IN (SELECT path FROM kernels WHERE name = ?) AND {where}"
        params = (value, *params)
    sql = f"SELECT 1 FROM records WHERE id IS NOT NULL AND {where} LIMIT 1"
    return cache.remembered(("listed", name, value), lambda: bool(cache.select(sql, params)))


def listed_values(cache: IndexCache, name: str) -> set[str]:
    """The non-empty values records with an id list for the filter ``name`` (one of
    ``LIST_COLUMNS``)."""
    column = _list_column(name)
    found = cache.select(
        f"SELECT DISTINCT value FROM records, json_each(records.{column}) "
        f"WHERE records.id IS NOT NULL AND {column} IS NOT NULL"  # json_each has an id too
    )
    if name == "symptom":
        found += cache.select("SELECT DISTINCT bottleneck FROM records WHERE id IS NOT NULL")
    return {value for (value,) in found if isinstance(value, str) and value}
