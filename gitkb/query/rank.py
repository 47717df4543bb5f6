"""Ranking: a text match over each record's retrieval terms, blended with its worth.

``blend`` (the default) keys a hit by ``hits * (1 + weight * worth)``: worth is a
score in [0, 1], so it can at most double a hit's key and never buries a much
stronger text match; ``text`` ranks by the match alone, ``importance`` by worth
alone. A record only neutral to the architecture, or only neutral to the
language (dsl ``any`` under ``--dsl``), ranks below one written for it; a sibling
architecture's record lower still. Ties go to the higher worth, then the id.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitkb.query.pool import EXACT, NEUTRAL, OTHER, Pool, PoolRecord
from gitkb.query.scope import Scope
from gitkb.store.cache import queries, vocabulary
from gitkb.store.cache.queries import RankedRow, Ranking

# Both may be true, but only one was written about this chip (or this language).
NEUTRAL_ARCH_DISCOUNT = 0.85
NEUTRAL_DSL_DISCOUNT = 0.85
OTHER_ARCH_DISCOUNT = 0.6
# A pool of at least 1/_LARGE_SHARE of the store: few records in importance order fall
# outside it, so a walk in that order finds its best soon (gitkb.store.cache.queries.ranked_rows).
_LARGE_SHARE = 4


@dataclass(slots=True, frozen=True)
class Hit:
    candidate: PoolRecord
    reach: str
    key: float
    text_hits: int


def text_hits(candidate: PoolRecord, terms: tuple[str, ...], any_term: bool) -> int:
    """How many terms the record's retrieval text holds: 0 when it fails the match (all
    terms, or any one under ``any_term``); 1 when there are no terms."""
    if not terms:
        return 1
    hits = (candidate.contains & ((1 << len(terms)) - 1)).bit_count()  # terms first: pool.texts
    if hits == 0 or (not any_term and hits != len(terms)):
        return 0
    return hits


def ranking(scope: Scope) -> Ranking:
    """How the cache keys ``scope``'s text matches: as ``_keyed`` does."""
    request = scope.request
    return Ranking(
        terms=scope.terms,
        any_term=request.any_term,
        mode=request.rank,
        weight=request.weight_importance,
        neutral_factor=NEUTRAL_ARCH_DISCOUNT,
        other_factor=OTHER_ARCH_DISCOUNT,
        any_dsl_factor=NEUTRAL_DSL_DISCOUNT if scope.dsl else None,
    )


def _keyed(pool: list[tuple[PoolRecord, str]], scope: Scope) -> list[Hit]:
    """The hits among ``pool``'s records (decided here, not by the cache)."""
    request = scope.request
    out = []
    for candidate, reach in pool:
        found = text_hits(candidate, scope.terms, request.any_term)
        if not found:
            continue
        if request.rank == "text":
            key = float(found)
        elif request.rank == "importance":
            key = candidate.importance
        else:
            key = found * (1.0 + request.weight_importance * candidate.importance)
        if reach == NEUTRAL:
            key *= NEUTRAL_ARCH_DISCOUNT
        elif reach == OTHER:
            key *= OTHER_ARCH_DISCOUNT
        if scope.dsl and candidate.dsl == "any":
            key *= NEUTRAL_DSL_DISCOUNT
        out.append(Hit(candidate, reach, key, found))
    return out


def _order(hit: Hit) -> tuple:
    return -hit.key, -hit.candidate.importance, hit.candidate.id, hit.candidate.path


def ranked(pool: Pool, limit: int, with_type: str | None = None) -> list[Hit]:
    """The pool's best ``limit`` text matches, best first, and with ``with_type`` every
    other match of that type after them, each in its rank."""
    scope = pool.scope
    keys = ranking(scope)
    labels = {queries.REACH_EXACT: EXACT, queries.REACH_NEUTRAL: NEUTRAL,
              queries.REACH_OTHER: OTHER}  # fmt: skip

    def decided(rows: list[RankedRow]) -> list[Hit]:
        hits = []
        for r in rows:
            assert isinstance(r.row, PoolRecord)  # ranked_rows made it one
            hits.append(Hit(r.row, labels[r.reach] if scope.arch else EXACT, r.key, r.text_hits))
        return hits

    # A pool that is a large share of the store is read from its most important end.
    from_the_top = pool.size() * _LARGE_SHARE >= queries.record_count(pool.cache)
    found = decided(
        queries.ranked_rows(pool.cache, pool.exact, keys, limit, PoolRecord, None, from_the_top)
    )
    if with_type is not None and vocabulary.holds(pool.cache, "type", with_type):
        typed = queries.ranked_rows(pool.cache, pool.exact, keys, None, PoolRecord, with_type)
        seen = {h.candidate.path for h in found}
        found += [h for h in decided(typed) if h.candidate.path not in seen]
    best = sorted(found + _keyed(pool.deferred, scope), key=_order)
    return [h for n, h in enumerate(best) if n < limit or h.candidate.type == with_type]


def matches(pool: Pool) -> int:
    """How many of the pool's records the terms match."""
    scope = pool.scope
    decided = queries.match_count(pool.cache, pool.exact, ranking(scope))
    return decided + sum(
        1 for c, _ in pool.deferred if text_hits(c, scope.terms, scope.request.any_term)
    )
