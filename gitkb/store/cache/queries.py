"""The index cache's read queries for retrieval (``git kb query``), as named rows.

Only ``gitkb.store`` speaks SQL to the cache; a reader states what it wants as data
(``Narrowing``, ``Exact``, ``Ranking``) and gets rows back by name (the values a filter
may take: ``gitkb.store.cache.vocabulary``). The ranking fields are columns of their own
(``gitkb.store.cache.rows``), so a scope is decided, counted and ranked here in SQL and only
the best rows come back: a broad scope decodes no entry and builds no row it does not
serve.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import NamedTuple

from gitkb.layout import FEEDBACK_DIR
from gitkb.store.cache.file import IMPORTANCE
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.cache.sql import holds_signal, list_holds, marks, own_arch

_RANKED = (
    "id, path, type, status, vendor, arch, dsl, family, level, tier, worth, gain, speedup, "
    "architectures, operators, symptoms, bottleneck"
)


@dataclass(slots=True)
class RankRow:
    """One record as ranking reads it. The list fields (``architectures``, ``operators``,
    ``symptoms``) stay JSON text until a filter asks for them (``strings``); bit ``i`` of
    ``contains`` says whether the record's retrieval text holds the query's ``i``-th text
    (the text itself stays in the cache)."""

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
    contains: int = 0


def strings(listed: str | None) -> list[str]:
    """A list field of a ``RankRow`` decoded (the strings it holds)."""
    return json.loads(listed) if listed else []


@dataclass(slots=True, frozen=True)
class ArchWanted:
    """Records written for ``arch``: their own arch (under any of ``vendors``, the store's,
    so the (vendor, arch) index answers), or one their scope lists besides. With
    ``kin_vendors``, also those vendors' (or no vendor's) records on ``kin_arch``, or on
    every arch when ``kin_arch`` is None."""

    arch: str
    vendors: tuple[str, ...]
    kin_vendors: tuple[str, ...] = ()
    kin_arch: str | None = None


@dataclass(slots=True, frozen=True)
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
    technique: str | None = None  # a name its canonical technique is found by (exact)


def _where(narrowing: Narrowing) -> tuple[str, tuple]:
    # An id: the record parsed. Spelled ``+id`` so the planner scans the table in order
    # rather than walking the id index into it row by row (the other indexes still serve).
    where = ["+id IS NOT NULL"]
    params: list = []
    wanted = narrowing.arch
    if wanted is not None:
        own, own_params = own_arch(wanted.vendors, wanted.arch)
        condition = f"({own} OR path IN (SELECT path FROM arches WHERE arch = ?))"
        params += [*own_params, wanted.arch]
        if wanted.kin_vendors:
            kin = f"(vendor IN ({marks(wanted.kin_vendors)}) OR vendor IS NULL)"
            params += wanted.kin_vendors
            if wanted.kin_arch is not None:
                kin = f"({kin} AND arch = ?)"
                params.append(wanted.kin_arch)
            condition = f"({condition} OR {kin})"
        where.append(condition)
    for column, values in (("vendor", narrowing.vendor_in), ("dsl", narrowing.dsl_in)):
        if values:
            where.append(f"{column} IN ({marks(values)})")
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
    if narrowing.technique:
        listed, listed_params = list_holds("techniques", narrowing.technique)
        where.append(listed)
        params += listed_params
    if narrowing.status_not_in:
        where.append(f"(status IS NULL OR status NOT IN ({marks(narrowing.status_not_in)}))")
        params += narrowing.status_not_in
    return " AND ".join(where), tuple(params)


def _by_id_and_path(values: tuple) -> tuple:
    return values[0], values[1]


# At most this many store-wide text matches are counted by path, not by reading texts
# again (match_count).
_FEW_MATCHED = 256
_GLOB_HOLDS = "(search_text GLOB ?)"  # with ``_pattern(text)``: the text holds ``text``
_INSTR_HOLDS = "(instr(search_text, ?) > 0)"  # with ``text`` itself: the same test
# SQLite refuses a GLOB pattern over 50,000 bytes (SQLITE_MAX_LIKE_PATTERN_LENGTH): a
# longer text is looked for with instr(), the same case-sensitive substring test.
_LONGEST_PATTERN = 40_000


def _holds(text: str) -> tuple[str, str]:
    """SQL for "the retrieval text holds ``text``" and its one parameter."""
    pattern = _pattern(text)
    if len(pattern.encode("utf-8", "surrogatepass")) > _LONGEST_PATTERN:
        return _INSTR_HOLDS, text
    return _GLOB_HOLDS, pattern


def _pattern(text: str) -> str:
    """The GLOB pattern of "the retrieval text holds ``text``", a case-sensitive substring
    test as Python's ``in`` (and instr()) is; GLOB finds it two to three times faster than
    instr() over a store's texts. ``*``, ``?`` and ``[`` stand for themselves in brackets."""
    return "*" + "".join(f"[{c}]" if c in "*?[" else c for c in text) + "*"


def _rows(
    cache: IndexCache, where: str, params: tuple, texts: tuple[str, ...], row_type: type
) -> list:
    """The records with an id ``where`` holds, by id, each as ``row_type`` (``RankRow`` or a
    subclass), its ``contains`` a bit per text (a case-sensitive substring test, as
    Python's ``in``)."""
    tests = [_holds(text) for text in texts]
    bits = " | ".join(f"({sql} << {n})" for n, (sql, _) in enumerate(tests))
    found = cache.select(
        f"SELECT {_RANKED}, {bits or '0'} FROM records WHERE {where}",
        (*(param for _, param in tests), *params),
    )
    # Sorted here, not by SQL: ORDER BY walks the id index into the table row by row, a
    # scan reads it in order (UTF-8 byte order is code point order: the same sort).
    found.sort(key=_by_id_and_path)
    return [row_type(*values) for values in found]


# How a scope reaches a record (``ReachRule``), as the cache computes it.
REACH_EXACT, REACH_NEUTRAL, REACH_OTHER = 0, 1, 2
# A large pool's walk from its most important end reads this many of its records before
# it falls back to keying them all (``ranked_rows``).
_WALK = 64


@dataclass(slots=True, frozen=True)
class ReachRule:
    """How an arch-scoped question reaches a record: ``REACH_EXACT`` when the record's arch,
    or one its scope lists, is ``arch``; else, unless ``strict``, ``REACH_NEUTRAL`` when its
    arch is ``neutral_arch`` and its vendor one of ``own_vendors`` or none (any vendor when
    ``arch`` is itself the neutral one), and ``REACH_OTHER`` under ``cross`` for any other
    arch of those vendors. Anything else is not reached."""

    arch: str
    neutral_arch: str
    own_vendors: tuple[str, ...]
    strict: bool = False
    cross: bool = False


@dataclass(slots=True, frozen=True)
class SymptomRule:
    """Records holding ``signal`` as a recorded signal (their bottleneck, or one of their
    symptoms); with ``text``, also those whose retrieval text holds ``text``."""

    signal: str
    text: str | None = None


@dataclass(slots=True, frozen=True)
class Exact:
    """A scope as the cache decides it exactly: ``narrowing`` and every test besides. The
    records in ``deferred_ids`` are left out (the caller decides them, their ranking fields
    refolded)."""

    narrowing: Narrowing
    reach: ReachRule | None = None
    level: str | None = None
    tier: str | None = None
    operator: str | None = None  # one of its scope's operators
    symptom: SymptomRule | None = None
    min_importance: float | None = None
    min_gain: float | None = None
    min_speedup: float | None = None
    exclude_ids: tuple[str, ...] = ()
    deferred_ids: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class Ranking:
    """How the cache keys a scope's text matches. Each of ``terms`` the retrieval text holds
    is a hit; a record matches with every term (any one, with ``any_term``; always, with no
    terms, as one hit). The key: ``blend`` hits x (1 + weight x importance), ``text`` the
    hits, ``importance`` alone; times ``neutral_factor`` or ``other_factor`` by reach, and
    times ``any_dsl_factor``, when given, for a record of dsl ``any``. Ties: importance,
    then id and path."""

    terms: tuple[str, ...]
    any_term: bool
    mode: str
    weight: float
    neutral_factor: float
    other_factor: float
    any_dsl_factor: float | None = None


class RankedRow(NamedTuple):
    """A text match as the cache ranked it: its ranking row, key, hits and reach code (a
    result row, so a NamedTuple, as the sqlite3 module's own docs suggest for rows)."""

    row: RankRow
    key: float
    text_hits: int
    reach: int


def _reach(rule: ReachRule) -> tuple[str, tuple]:
    """The reach code of a row (NULL: not reached), as SQL."""
    own = "vendor IS NULL"
    if rule.own_vendors:
        own = f"({own} OR vendor IN ({marks(rule.own_vendors)}))"
    listed, listed_params = list_holds("architectures", rule.arch)
    sql = f"CASE WHEN arch = ? OR {listed} THEN {REACH_EXACT}"
    params: list = [rule.arch, *listed_params]
    if not rule.strict:
        if rule.arch == rule.neutral_arch:
            sql += f" WHEN arch = ? THEN {REACH_NEUTRAL}"
            params.append(rule.neutral_arch)
        else:
            sql += f" WHEN arch = ? THEN CASE WHEN {own} THEN {REACH_NEUTRAL} END"
            params += [rule.neutral_arch, *rule.own_vendors]
        if rule.cross:
            sql += f" WHEN {own} THEN {REACH_OTHER}"
            params += rule.own_vendors
    return sql + " END", tuple(params)


def _exact_where(exact: Exact) -> tuple[str, tuple]:
    where, found = _where(exact.narrowing)
    parts, params = [where], list(found)
    if exact.reach is not None:
        reach, reach_params = _reach(exact.reach)
        parts.append(f"({reach}) IS NOT NULL")
        params += reach_params
    for column, value in (("level", exact.level), ("tier", exact.tier)):
        if value:
            parts.append(f"{column} = ?")
            params.append(value)
    if exact.operator:
        listed, listed_params = list_holds("operators", exact.operator)
        parts.append(listed)
        params += listed_params
    if exact.symptom is not None:
        signal, signal_params = holds_signal(exact.symptom.signal)
        params += signal_params
        if exact.symptom.text is not None:
            holds, param = _holds(exact.symptom.text)
            signal = f"({signal} OR {holds})"
            params.append(param)
        parts.append(signal)
    for floored, floor in (
        (IMPORTANCE, exact.min_importance),
        ("gain", exact.min_gain),
        ("speedup", exact.min_speedup),
    ):
        if floor is not None:
            parts.append(f"{floored} >= ?")
            params.append(floor)
    for ids in (exact.exclude_ids, exact.deferred_ids):
        if ids:
            parts.append("id NOT IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(ids))
    return " AND ".join(parts), tuple(params)


def _hits(ranking: Ranking) -> tuple[str, tuple, str, tuple]:
    """SQL for a matching row's hits and for whether a row matches, each with its
    parameters. A row that matches every term has as many hits as there are terms: only
    ``any_term`` counts them, so a record's text is searched once a term."""
    tests = [_holds(term) for term in ranking.terms]
    terms = tuple(param for _, param in tests)
    if not terms:
        return "1", (), "1", ()
    if not ranking.any_term:
        return str(len(terms)), (), " AND ".join(sql for sql, _ in tests), terms
    hits = "(" + " + ".join(sql for sql, _ in tests) + ")"
    return hits, terms, f"{hits} > 0", terms


def _key(ranking: Ranking, by_reach: bool) -> tuple[str, tuple]:
    """SQL for a matching row's key (over the ``hits`` and, ``by_reach``, ``reach``
    columns), and its parameters."""
    params: list = []
    if ranking.mode == "text":
        key = "(hits * 1.0)"
    elif ranking.mode == "importance":
        key = IMPORTANCE
    else:
        key = f"(hits * (1.0 + ? * {IMPORTANCE}))"
        params.append(ranking.weight)
    if by_reach:
        factor = f"CASE reach WHEN {REACH_NEUTRAL} THEN ? WHEN {REACH_OTHER} THEN ? ELSE 1.0 END"
        key = f"({key} * {factor})"
        params += [ranking.neutral_factor, ranking.other_factor]
    if ranking.any_dsl_factor is not None:
        key = f"({key} * CASE WHEN dsl = 'any' THEN ? ELSE 1.0 END)"
        params.append(ranking.any_dsl_factor)
    return key, tuple(params)


def scope_count(cache: IndexCache, exact: Exact) -> int:
    """How many records the cache decides are in ``exact``."""
    where, params = _exact_where(exact)
    return cache.select(f"SELECT count(*) FROM records WHERE {where}", params)[0][0]


def scope_holds_any(cache: IndexCache, exact: Exact) -> bool:
    """Whether any record is in ``exact`` (read up to the first)."""
    where, params = _exact_where(exact)
    return bool(cache.select(f"SELECT 1 FROM records WHERE {where} LIMIT 1", params))


def match_count(cache: IndexCache, exact: Exact, ranking: Ranking) -> int:
    """How many of them ``ranking``'s terms match. A diagnosis asks this of several scopes
    with the same terms: where the terms match few records in the whole store, those are
    found once (one read of every text) and each scope counts only them."""
    where, params = _exact_where(exact)
    _, _, matching, matching_params = _hits(ranking)
    few = _matched_anywhere(cache, ranking) if ranking.terms else None
    if few is None:
        sql = f"SELECT count(*) FROM records WHERE {where} AND ({matching})"
        return cache.select(sql, (*params, *matching_params))[0][0]
    if not few:
        return 0
    sql = f"SELECT count(*) FROM records WHERE {where} AND path IN (SELECT value FROM json_each(?))"
    return cache.select(sql, (*params, json.dumps(few)))[0][0]


def _matched_anywhere(cache: IndexCache, ranking: Ranking) -> tuple[str, ...] | None:
    """The paths of the records anywhere in the store that ``ranking``'s terms match (None:
    more than ``_FEW_MATCHED``, reading stopping there)."""
    _, _, matching, matching_params = _hits(ranking)
    sql = f"SELECT path FROM records WHERE +id IS NOT NULL AND ({matching}) LIMIT ?"

    def matched() -> tuple[str, ...] | None:
        found = cache.select(sql, (*matching_params, _FEW_MATCHED + 1))
        return None if len(found) > _FEW_MATCHED else tuple(path for (path,) in found)

    return cache.remembered(("matched_anywhere", ranking.terms, ranking.any_term), matched)


def scope_rows(
    cache: IndexCache,
    exact: Exact,
    texts: tuple[str, ...],
    row_type: type,
    paths: tuple[str, ...] | None = None,
) -> list:
    """The records in ``exact`` (with ``paths``, only those at these paths), by id
    (``_rows``)."""
    where, params = _exact_where(exact)
    if paths is not None:
        where += " AND path IN (SELECT value FROM json_each(?))"
        params = (*params, json.dumps(paths))
    return _rows(cache, where, params, texts, row_type)


def scope_keys(cache: IndexCache, exact: Exact) -> list[tuple[str, str]]:
    """(id, path) of every record in ``exact``, in no order (sorted, they are where
    ``scope_rows`` puts each), read without the rest of its row."""
    where, params = _exact_where(exact)
    return cache.select(f"SELECT id, path FROM records WHERE {where}", params)


def deferred_rows(cache: IndexCache, exact: Exact, texts: tuple[str, ...], row_type: type) -> list:
    """The records ``exact`` leaves to the caller that its narrowing may reach, by id
    (``_rows``)."""
    if not exact.deferred_ids:
        return []
    where, params = _where(exact.narrowing)
    where += " AND id IN (SELECT value FROM json_each(?))"
    return _rows(cache, where, (*params, json.dumps(exact.deferred_ids)), texts, row_type)


@dataclass(slots=True, frozen=True)
class _Keying:
    """The SQL ``ranked_rows`` decides and keys a scope's rows with, each piece beside its
    parameters: the scope, a row's hits, whether it matches, its reach code, its key."""

    where: str
    where_params: tuple
    hits: str
    hits_params: tuple
    matching: str
    matching_params: tuple
    reach: str
    reach_params: tuple
    key: str
    key_params: tuple


def _keying(exact: Exact, ranking: Ranking, of_type: str | None = None) -> _Keying:
    where, params = _exact_where(exact)
    if of_type is not None:
        where += " AND type = ?"
        params = (*params, of_type)
    hits, hits_params, matching, matching_params = _hits(ranking)
    reach, reach_params = _reach(exact.reach) if exact.reach is not None else ("NULL", ())
    key, key_params = _key(ranking, exact.reach is not None)
    return _Keying(where, params, hits, hits_params, matching, matching_params, reach,
                   reach_params, key, key_params)  # fmt: skip


def ranked_rows(
    cache: IndexCache,
    exact: Exact,
    ranking: Ranking,
    limit: int | None,
    row_type: type = RankRow,
    of_type: str | None = None,
    from_the_top: bool = False,
) -> list[RankedRow]:
    """The best ``limit`` (None: all) of ``exact``'s text matches, best first, each row as
    ``row_type``; with ``of_type``, only records of that type. ``from_the_top`` (a pool
    that is a large share of the store): its records are read in importance order first,
    and reading stops once no unread record can outrank the ``limit`` best found; only
    when that does not settle it are they all keyed, as without."""
    if from_the_top and limit is not None and of_type is None:
        walked = _walked(cache, exact, ranking, limit, row_type)
        if walked is not None:
            return walked
    k = _keying(exact, ranking, of_type)
    inner = (
        f"SELECT {_RANKED}, {k.hits} AS hits, {k.reach} AS reach, {IMPORTANCE} AS importance "
        f"FROM records WHERE {k.where} AND ({k.matching})"
    )
    ordered = "ORDER BY key DESC, importance DESC, id, path"
    sql = f"SELECT *, {k.key} AS key FROM ({inner}) {ordered}"
    if limit is not None:
        sql += " LIMIT ?"
    found = cache.select(
        sql,
        (*k.key_params, *k.hits_params, *k.reach_params, *k.where_params, *k.matching_params,
         *((limit,) if limit is not None else ())),
    )  # fmt: skip
    return [_ranked_row(values, row_type) for values in found]


_WIDTH = len(fields(RankRow)) - 1  # the ranking columns: every field but ``contains``


def _ranked_row(values: tuple, row_type: type) -> RankedRow:
    """A row of the ranking columns, then hits, reach, (...,) key, as a ``RankedRow``."""
    return RankedRow(row_type(*values[:_WIDTH]), values[-1], values[_WIDTH], values[_WIDTH + 1])


def _best_unread(ranking: Ranking, importance: float) -> float | None:
    """The highest key a record of at most ``importance`` can have (None: no such bound, a
    negative weight keying the less important higher)."""
    most_hits = max(1, len(ranking.terms))
    if ranking.mode == "text":
        return most_hits * 1.0
    if ranking.mode == "importance":
        return importance
    if not ranking.weight >= 0:
        return None
    return most_hits * (1.0 + ranking.weight * importance)  # the key's own arithmetic (_key)


def _order(values: tuple) -> tuple:
    """``ranked_rows``' order over a row ``_walked`` reads (its importance after ``matched``):
    key, then importance, down; then id and path."""
    return -values[-1], -values[_WIDTH + 3], values[0], values[1]


def _walked(
    cache: IndexCache, exact: Exact, ranking: Ranking, limit: int, row_type: type
) -> list[RankedRow] | None:
    """``ranked_rows`` read from the top of ``records_rank``: the first ``_WALK`` records
    in scope in importance order (the scope's columns tested in the index, the table read
    only for those in it), keyed; None when a record not read could still outrank the
    ``limit``-th best of them. Every factor of a key (reach, dsl) is at most 1, so no
    unread record's key exceeds ``_best_unread``; one that equals it loses the tie, coming
    later in the same order."""
    k = _keying(exact, ranking)
    inner = (
        f"SELECT {_RANKED}, {k.hits} AS hits, reach, ({k.matching}) AS matched, "
        f"{IMPORTANCE} AS importance FROM (SELECT {_RANKED}, search_text, {k.reach} AS reach "
        f"FROM records INDEXED BY records_rank WHERE {k.where} "
        f"ORDER BY {IMPORTANCE} DESC, id, path LIMIT ?)"
    )
    found = cache.select(
        f"SELECT *, {k.key} AS key FROM ({inner})",
        (*k.key_params, *k.hits_params, *k.matching_params, *k.reach_params, *k.where_params,
         _WALK),
    )  # fmt: skip
    best = sorted((values for values in found if values[_WIDTH + 2]), key=_order)[:limit]
    if len(found) == _WALK:  # the walk ended before the pool did
        bound = _best_unread(ranking, found[-1][_WIDTH + 3])
        if bound is None or len(best) < limit or best[-1][-1] < bound:
            return None
    return [_ranked_row(values, row_type) for values in best]


def record_count(cache: IndexCache) -> int:
    """How many records with an id the snapshot holds."""
    sql = "SELECT count(*) FROM records WHERE id IS NOT NULL"
    return cache.remembered(("record_count",), lambda: cache.select(sql)[0][0])


def feedback_paths(cache: IndexCache) -> frozenset[str]:
    """The paths of the feedback files the snapshot holds."""

    def paths() -> frozenset[str]:
        found = cache.select(
            "SELECT path FROM files WHERE path >= ? AND path < ?",
            (FEEDBACK_DIR + "/", FEEDBACK_DIR + "0"),  # every path under feedback/
        )
        return frozenset(row[0] for row in found)

    return cache.remembered(("feedback_paths",), paths)
