"""``git kb query``: the store's scoped, ranked knowledge for an agent, as one answer.

Reads ``main`` through the index cache (a bare clone works, no checkout): the
scope is resolved and the pool chosen from the cache's columns (named rows of
``gitkb.store.cache.queries``; no entry is decoded); record bytes are read only for the
hits served (and for records whose feedback must be folded in), so the
query costs what it returns. The store comes opened (``Store.open``): a caller
that keeps it (the MCP server) asks every question of the commit ``main`` names
then.

The answer is self-describing, so stdout alone cannot mislead: ``query`` is the
scope as resolved, ``result.kind`` says ``matches``, ``empty`` or ``fallback``
(a labelled random sample of the scoped pool, never mistakable for a hit), and an
empty answer says why: which single filter removal would match, and how many
matches this vendor's sibling architectures hold (``--cross-arch`` serves them).
"""

from __future__ import annotations

import random
from functools import lru_cache

from gitkb import record as rec
from gitkb.errors import GitkbError, echoed
from gitkb.layout import feedback_path, id_of
from gitkb.query import budget, cards, pool, rank, scope, serve
from gitkb.query.feedback import fold, folded_rank
from gitkb.store.cache import queries
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.store import Store
from gitkb.util import log

# The filters whose single removal the zero-match diagnosis tries, in its order.
_DIAGNOSED = ("arch", "dsl", "family", "operator", "type", "level", "status", "tier", "symptom",
              "technique")  # fmt: skip
_COVERAGE_READING = (
    "by_reach.exact is the only count written about this exact architecture. A pool that "
    "is entirely architecture-neutral means your own cell is empty even though the pool "
    "is not."
)


class Reader:
    """One query's reads of the store at one commit: candidates from the cache, enriched
    once each with what ranking must fold in (their feedback)."""

    def __init__(
        self, store: Store, cache: IndexCache, request: scope.Request, now: float | None
    ) -> None:
        self.view = store.view(cache.commit)
        self.cache = cache
        self.request = request
        self.now = now
        # id -> (worth, tier) as refolded: each scope's rows are read afresh (their
        # text tests differ), the records behind them are read once
        self._enriched: dict[str, tuple[float | None, str | None]] = {}
        self._with_feedback = queries.feedback_paths(cache)
        # ranked here, not by the cache: their worth and tier are refolded from feedback
        self._deferred = tuple(sorted({id_of(path) for path in self._with_feedback}))

    def pooled(self, scoped_by: scope.Scope) -> pool.Pool:
        return pool.pooled(self.cache, scoped_by, self._deferred, self.refold)

    def refold(self, found: list[pool.PoolRecord]) -> None:
        for c in found:
            if c.id in self._enriched:
                c.worth, c.tier = self._enriched[c.id]
        self._enrich([c for c in found if c.id not in self._enriched])

    def _enrich(self, fresh: list[pool.PoolRecord]) -> None:
        touched = [c for c in fresh if feedback_path(c.id) in self._with_feedback]
        if not touched:
            return

        paths = {c.path for c in touched} | {feedback_path(c.id) for c in touched}
        files = self.view.read_checked(sorted(paths))
        for c in touched:
            raw = files.get(c.path)
            record = parsed(c.path, raw) if raw is not None else None
            if record is None:
                continue
            events = fold(files.get(feedback_path(c.id)))
            c.worth, c.tier = folded_rank(record, events, self.now)
            self._enriched[c.id] = (c.worth, c.tier)

    def matches(self, scoped_by: scope.Scope) -> int:
        """How many text matches ``scoped_by`` has (the diagnosis' counts)."""
        return rank.matches(self.pooled(scoped_by))

    def records(self, paths: list[str]) -> dict[str, dict]:
        out = {}
        for path, raw in self.view.read_checked(paths).items():
            data = parsed(path, raw)
            if data is not None:
                out[path] = data
        return out


@lru_cache(maxsize=512)
def parsed(path: str, raw: bytes) -> dict | None:
    """A record file's bytes parsed (None: unreadable), kept for the next question: a
    server asked again and again parses each hit once. Shared between answers, so it is
    read, never changed (``serve`` builds each hit anew)."""
    return rec.load(path, raw).data


def _resolved(s: scope.Scope) -> dict:
    request = s.request
    return {
        "terms": list(s.terms),
        "arch": s.arch,
        "arch_given": request.arch,
        "vendor": s.vendor,
        "dsl": s.dsl,
        "family": s.family,
        "operator": s.operator,
        "type": s.type,
        "level": s.level,
        "status": s.status,
        "tier": s.tier,
        "symptom": s.symptom,
        "technique": s.technique,
        "architecture_neutral_included": bool(s.arch) and not request.strict_arch,
        "other_architectures_included": bool(s.arch) and request.cross_arch,
        "vendor_gate": s.arch_vendor if s.arch and not s.vendor else None,
        "retired_included": request.include_retired or bool(s.status),
        "symptom_note": s.notes[0] if s.notes else None,
        "symptom_alternatives": list(s.symptom_alternatives),
        "symptom_match_mode": None,
        "rank": request.rank,
        "limit": request.limit,
        "brief": request.brief,
    }


def _empty_because(reader: Reader, s: scope.Scope, in_scope: pool.Pool) -> list[dict]:
    """Which single filter emptied the answer, and what dropping it would match: "this
    store has no such knowledge" and "these filters cannot co-occur" look alike."""
    out = []
    for name in _DIAGNOSED:
        if getattr(s, name) is None:
            continue
        n = reader.matches(s.without(name))
        if n:
            out.append({"drop": "--" + name, "would_match": n})
    if s.terms:
        n = in_scope.size()  # without terms every record in scope matches (the pool is theirs)
        if n:
            out.append({"drop": "the free-text terms", "would_match": n})
    return sorted(out, key=lambda item: -item["would_match"])


def _sample(in_scope: pool.Pool, request: scope.Request) -> list:
    """The fallback: a random sample of the pool (``request.seed`` draws it), as
    ``random.sample`` draws from its members; drawn by position, so only the members
    drawn are read whole."""
    size = in_scope.size()
    if not size:
        return []

    n = max(1, min(size, int(size * request.fallback_ratio) or 1))
    # sample() picks positions from the population's length alone: these are its picks
    return in_scope.at(random.Random(request.seed).sample(range(size), min(n, request.limit)))


def query(store: Store, request: scope.Request, now: float | None = None) -> dict:
    """The answer to ``request`` over the store's main (one JSON-ready dict). Every file it
    serves or folds in is main's (checked against main's tree); a cache caught lying is
    rebuilt and the question asked again."""
    request = request.checked()
    return store.asked(lambda: _query(store, request, now))


def _query(store: Store, request: scope.Request, now: float | None) -> dict:
    tip = store.tip
    with store.cache.snapshot(tip) as cache:
        s = scope.resolve(cache, request)
        for note in s.notes:
            log.logger(__name__).warning("%s", note)
        reader = Reader(store, cache, request, now)
        in_scope = reader.pooled(s)
        resolved = _resolved(s)
        resolved["symptom_match_mode"] = in_scope.symptom_mode
        # a broad question moves cards ahead: every card is ranked, besides the best hits
        with_cards = cards.CARD_TYPE if cards.broad(s) else None
        ranked = rank.ranked(in_scope, request.limit, with_cards)
        ordered = cards.cards_first(ranked, s, reader.records)
        hits = [(h.candidate, h.reach) for h in ordered[: request.limit]]
        result: dict = {
            "kind": "matches",
            "served": 0,
            "scoped_pool": in_scope.size(),
            "store_total": queries.record_count(cache),
            "commit": tip,
            "note": None,
        }
        if not hits:
            result["kind"] = "empty"
            removals = _empty_because(reader, s, in_scope)
            if removals:
                result["empty_because"] = {
                    "diagnosis": "over-constrained scope, not an empty store",
                    "single_filter_removals_that_would_match": removals,
                }
            if s.arch and not request.cross_arch and not request.strict_arch:
                n = reader.matches(s.widened())
                if n:
                    result["available_elsewhere"] = {
                        "matches_on_other_architectures_of_this_vendor": n,
                        "how_to_reach_them": "re-run with --cross-arch; those hits are "
                        "labelled match.arch=other-architecture",
                    }
            if request.fallback:
                hits = _sample(in_scope, request)
                if hits:
                    result["kind"] = "fallback"
                    result["note"] = serve.FALLBACK_NOTE
        records = reader.records([c.path for c, _ in hits])
    served = [
        serve.served(records[c.path], how, request.brief) for c, how in hits if c.path in records
    ]
    for hit, (c, _) in zip(served, [h for h in hits if h[0].path in records], strict=True):
        counts = cards.evidence_counts(records[c.path])
        if counts is not None:
            hit["evidence_counts"] = counts
    result["served"] = len(served)
    answer = {"query": resolved, "result": result, "records": served}
    return budget.fit(answer, request.max_bytes)


def coverage(store: Store, request: scope.Request, now: float | None = None) -> dict:
    """How the scoped pool decomposes (``--coverage``): by reach, by type, by dsl. A pool
    size alone cannot tell a caller that its own cell is empty."""
    request = request.checked()
    return store.asked(lambda: _coverage(store, request, now))


def _coverage(store: Store, request: scope.Request, now: float | None) -> dict:
    with store.cache.snapshot(store.tip) as cache:
        s = scope.resolve(cache, request)
        in_scope = Reader(store, cache, request, now).pooled(s).members()
        total = queries.record_count(cache)
    by: dict[str, dict[str, int]] = {"by_reach": {}, "by_type": {}, "by_dsl": {}}
    for c, how in in_scope:
        for name, value in (("by_reach", how), ("by_type", c.type), ("by_dsl", c.dsl)):
            by[name][str(value)] = by[name].get(str(value), 0) + 1
    return {
        "query": _resolved(s),
        "scoped_pool": len(in_scope),
        "store_total": total,
        **by,
        "reading": _COVERAGE_READING,
    }


def shown(store: Store, record_id: str) -> dict:
    """One record's served projection, payload in full (what ``--brief`` named)."""
    loaded = store.read_record(record_id)
    if loaded.data is None:
        raise GitkbError(f"{record_id}: {loaded.path} is unreadable ({loaded.error})")
    return serve.served(loaded.data, None)


def vocabulary(store: Store, name: str, like: str | None = None) -> dict:
    """The store's values of one filter (``--list-*``): tokens, then free-text values."""
    if name not in scope.LISTABLE:
        raise GitkbError(f"cannot list {echoed(name)}; lists: {', '.join(scope.LISTABLE)}", 2)
    with store.cache.snapshot(store.tip) as cache:
        tokens, prose = scope.listing(cache, name, like)
    return {"name": name, "values": tokens + prose, "free_text": prose}
