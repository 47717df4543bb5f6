"""Ranking: a text match over each record's retrieval terms, blended with its worth.

``blend`` (the default) keys a hit by ``hits * (1 + weight * worth)``: worth is a
score in [0, 1], so it can at most double a hit's key and never buries a much
stronger text match; ``text`` ranks by the match alone, ``importance`` by worth
alone. A record only neutral to the architecture, or only neutral to the
language (dsl ``any`` under ``--dsl``), ranks below one written for it; a sibling
architecture's record lower still. Ties go to the higher worth, then the id.
"""

from __future__ import annotations

import heapq

from gitkb.query.pool import NEUTRAL, OTHER, PoolRecord
from gitkb.query.scope import Scope
from gitkb.valueclass import value_class

# Both may be true, but only one was written about this chip (or this language).
NEUTRAL_ARCH_DISCOUNT = 0.85
NEUTRAL_DSL_DISCOUNT = 0.85
OTHER_ARCH_DISCOUNT = 0.6


@value_class(frozen=True)
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


def _keyed(pool: list[tuple[PoolRecord, str]], scope: Scope) -> list[tuple]:
    """(key, worth, candidate, reach, text hits) of each of the pool's text matches."""
    request = scope.request
    out = []
    for candidate, reach in pool:
        found = text_hits(candidate, scope.terms, request.any_term)
        if not found:
            continue
        worth = candidate.importance
        if request.rank == "text":
            key = float(found)
        elif request.rank == "importance":
            key = worth
        else:
            key = found * (1.0 + request.weight_importance * worth)
        if reach == NEUTRAL:
            key *= NEUTRAL_ARCH_DISCOUNT
        elif reach == OTHER:
            key *= OTHER_ARCH_DISCOUNT
        if scope.dsl and candidate.dsl == "any":
            key *= NEUTRAL_DSL_DISCOUNT
        out.append((key, worth, candidate, reach, found))
    return out


def _order(keyed: tuple) -> tuple:
    return -keyed[0], -keyed[1], keyed[2].id


def ranked(pool: list[tuple[PoolRecord, str]], scope: Scope, limit: int | None = None) -> list[Hit]:
    """The pool's text matches, best first (the best ``limit`` of them, when given)."""
    keyed = _keyed(pool, scope)
    if limit is None:
        best = sorted(keyed, key=_order)
    else:
        best = heapq.nsmallest(limit, keyed, key=_order)  # sorted()[:limit], ties alike
    return [Hit(candidate, reach, key, found) for key, _, candidate, reach, found in best]


def matches(pool: list[tuple[PoolRecord, str]], scope: Scope) -> int:
    """How many of the pool's records the terms match."""
    request = scope.request
    return sum(1 for c, _ in pool if text_hits(c, scope.terms, request.any_term))
