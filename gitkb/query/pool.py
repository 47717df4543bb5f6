"""The scoped pool: which records a scope reaches, and how each was reached.

The index cache decides a scope from the ranking fields it keeps as columns, no entry
decoded: its indexed columns narrow the records (``gitkb.store.cache.queries.Narrowing``, a
superset), and the rest of the rules below (``Exact``) are stated here as data for it
to count and rank in SQL, so a broad scope brings back only the hits it serves. The
records with feedback are the exception: their worth and tier are refolded from their
feedback files, so the same rules decide them here, in Python (``reach``, ``_tests``,
``symptom_match``), and they rank beside the cache's
(``tests/unit/query/test_answer.py`` holds both ways equal). The rules:

* ``--arch``: a record written for that architecture (its ``arch`` or one of its
  ``architectures``) is ``exact``; an architecture-neutral record (arch
  ``generic``) of the same vendor, or of no vendor in particular, is
  ``architecture-neutral``; a sibling architecture of the same vendor is
  ``other-architecture``, only under ``--cross-arch``. Another vendor's records
  never;
* ``--vendor`` also takes vendor ``generic``; ``--dsl`` also takes dsl ``any``;
* ``--symptom``: a record holding it as a recorded signal (bottleneck or symptom)
  matches as ``signal``, one merely mentioning it as ``text``; when any record
  matches as a signal, the text-only ones leave the pool.
"""

from __future__ import annotations

from collections.abc import Callable

from gitkb.query.scope import NEUTRAL_ARCH, RETIRED_STATUSES, Scope
from gitkb.record.values import json_number
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.cache.queries import (
    ArchWanted,
    Exact,
    Narrowing,
    RankRow,
    ReachRule,
    SymptomRule,
    deferred_rows,
    scope_count,
    scope_holds_any,
    scope_keys,
    scope_rows,
    strings,
)

EXACT, NEUTRAL, OTHER = "exact", "architecture-neutral", "other-architecture"


class PoolRecord(RankRow):
    """One record as ranking sees it: the cache's ranking columns (``worth`` and ``tier``
    may be refolded from feedback before ranking). RankRow's fields and slots: nothing of
    its own to generate."""

    __slots__ = ()

    @property
    def importance(self) -> float:
        """worth.rank.score as ranking uses it: a number in [0, 1], 0 when missing."""
        value = self.worth
        if type(value) not in (float, int):  # None, and a boolean, count as missing
            return 0.0
        if 0 <= value <= 1:
            return float(value)
        return 1.0 if value > 1 else 0.0


def texts(scope: Scope) -> tuple[str, ...]:
    """What a candidate's ``contains`` answers for ``scope``: its terms, in order, then the
    symptom as a text mention would spell it."""
    return (*scope.terms, *((symptom_text(scope.symptom),) if scope.symptom else ()))


def symptom_text(symptom: str) -> str:
    """A symptom as a record's retrieval text would mention it."""
    return symptom.replace("-", " ")


class Pool:
    """A scope's records. The cache decides, counts and ranks those of ``exact``; the
    ``deferred`` ones (their ranking fields refolded from feedback or the record) are
    decided here, each with its reach, and ranked beside them (``gitkb.query.rank``)."""

    def __init__(
        self,
        cache: IndexCache,
        scope: Scope,
        exact: Exact,
        deferred: list[tuple[PoolRecord, str]],
        symptom_mode: str | None,
    ) -> None:
        self.cache = cache
        self.scope = scope
        self.exact = exact
        self.deferred = deferred
        self.symptom_mode = symptom_mode  # signal or text: how a symptom scope matched
        self._size: int | None = None

    def size(self) -> int:
        """How many records are in scope (counted once: ranking asks, then the answer)."""
        if self._size is None:
            self._size = scope_count(self.cache, self.exact) + len(self.deferred)
        return self._size

    def members(self) -> list[tuple[PoolRecord, str]]:
        """(record, reach) of every record in scope, by id."""
        decided = scope_rows(self.cache, self.exact, texts(self.scope), PoolRecord)
        every = [(c, reach(c, self.scope) or EXACT) for c in decided] + self.deferred
        return sorted(every, key=lambda member: (member[0].id, member[0].path))

    def at(self, positions: list[int]) -> list[tuple[PoolRecord, str]]:
        """``members()[i]`` for each of ``positions``, in their order (a fallback's sample):
        the members' ids and paths are read to place them, and only those asked for whole."""
        deferred = {c.path: (c, how) for c, how in self.deferred}
        # by id and path, as members() sorts (one sort: the cache's keys come unsorted)
        keys = sorted(
            [*scope_keys(self.cache, self.exact), *((c.id, c.path) for c, _ in self.deferred)]
        )
        paths = [keys[i][1] for i in positions]
        wanted = tuple(p for p in paths if p not in deferred)
        rows = scope_rows(self.cache, self.exact, texts(self.scope), PoolRecord, wanted)
        decided = {c.path: (c, reach(c, self.scope) or EXACT) for c in rows}
        return [deferred[p] if p in deferred else decided[p] for p in paths]


def pooled(
    cache: IndexCache,
    scope: Scope,
    deferred_ids: tuple[str, ...],
    refold: Callable[[list[PoolRecord]], None],
) -> Pool:
    """``scope``'s pool, the records of ``deferred_ids`` refolded by ``refold`` and decided
    here."""
    exact = _exact(scope, deferred_ids)
    deferred = deferred_rows(cache, exact, texts(scope), PoolRecord)
    refold(deferred)
    kept = _scoped(deferred, scope)
    mode = None
    if scope.symptom:
        # A recorded signal beats a passing mention: serving both buries the records that
        # are about this bottleneck under those that only use its words.
        signal = any(strength == "signal" for _, _, strength in kept)
        signal = signal or scope_holds_any(cache, _exact(scope, deferred_ids, False))
        mode = "signal" if signal else "text"
        exact = _exact(scope, deferred_ids, not signal)
        kept = [k for k in kept if k[2] == "signal" or not signal]
    return Pool(cache, scope, exact, [(c, how) for c, how, _ in kept], mode)


def _exact(scope: Scope, deferred_ids: tuple[str, ...], by_text: bool = False) -> Exact:
    """What the cache decides of ``scope``; a symptom scope matches as a recorded signal,
    or, ``by_text``, also as a text mention."""
    request = scope.request
    rule = None
    if scope.arch:
        own = tuple(v for v in (scope.arch_vendor, "generic") if v)
        rule = ReachRule(scope.arch, NEUTRAL_ARCH, own, request.strict_arch, request.cross_arch)
    symptom = None
    if scope.symptom:
        symptom = SymptomRule(scope.symptom, symptom_text(scope.symptom) if by_text else None)
    return Exact(
        narrowing=_narrowing(scope),
        reach=rule,
        level=scope.level,
        tier=scope.tier,
        operator=scope.operator,
        symptom=symptom,
        min_importance=request.min_importance,
        min_gain=request.min_gain,
        min_speedup=request.min_speedup,
        exclude_ids=tuple(sorted(request.exclude)),
        deferred_ids=deferred_ids,
    )


def _narrowing(scope: Scope) -> Narrowing:
    """What every record in ``scope`` meets (a superset; ``_exact`` says the rest)."""
    request = scope.request
    arch = None
    if scope.arch:
        # the same vendor's (or no one's) generic records; under --cross-arch, any of its
        # architectures
        kin = () if request.strict_arch else (scope.arch_vendor, "generic")
        kin_arch = None if request.cross_arch else NEUTRAL_ARCH
        arch = ArchWanted(scope.arch, scope.store_vendors, kin, kin_arch)
    retired = () if scope.status or request.include_retired else RETIRED_STATUSES
    return Narrowing(
        arch=arch,
        vendor_in=(scope.vendor, "generic") if scope.vendor else (),
        dsl_in=(scope.dsl, "any") if scope.dsl else (),
        family=scope.family,
        kernel=scope.operator,
        type=scope.type,
        status=scope.status,
        status_not_in=retired,
        technique=scope.technique,
    )


def reach(candidate: PoolRecord, scope: Scope) -> str | None:
    """How an arch-scoped query reaches a record (``exact`` when it is not arch-scoped), or
    None when it does not."""
    if not scope.arch:
        return EXACT
    if candidate.arch == scope.arch or scope.arch in strings(candidate.architectures):
        return EXACT
    request = scope.request
    if request.strict_arch:
        return None
    # Neutral within a vendor: a record for any CDNA part is no advice about a Hopper part.
    own = candidate.vendor in (scope.arch_vendor, "generic", None)
    if candidate.arch == NEUTRAL_ARCH:
        return NEUTRAL if scope.arch == NEUTRAL_ARCH or own else None
    return OTHER if request.cross_arch and own else None


def symptom_match(candidate: PoolRecord, scope: Scope) -> str | None:
    """``signal`` when the record holds the scope's symptom as a recorded signal, ``text``
    when it only mentions it, else None."""
    symptom = scope.symptom
    if candidate.bottleneck == symptom or symptom in strings(candidate.symptoms):
        return "signal"
    if candidate.contains >> len(scope.terms) & 1:  # the symptom's text comes last (``texts``)
        return "text"
    return None


def _tests(scope: Scope) -> list[Callable[[PoolRecord], bool]]:
    """The exact filters ``scope`` sets besides arch and symptom, one test each."""
    request = scope.request
    tests: list[Callable[[PoolRecord], bool]] = []
    for value, test in (
        (scope.vendor, lambda c: c.vendor in (scope.vendor, "generic")),
        (scope.dsl, lambda c: c.dsl in (scope.dsl, "any")),
        (scope.family, lambda c: c.family == scope.family),
        (scope.operator, lambda c: scope.operator in strings(c.operators)),
        (scope.type, lambda c: c.type == scope.type),
        (scope.level, lambda c: c.level == scope.level),
        (scope.status, lambda c: c.status == scope.status),
        (scope.tier, lambda c: c.tier == scope.tier),
    ):
        if value:
            tests.append(test)
    if not scope.status and not request.include_retired:
        tests.append(lambda c: c.status not in RETIRED_STATUSES)
    if request.min_importance is not None:
        tests.append(lambda c: c.importance >= request.min_importance)
    if request.min_gain is not None:
        tests.append(lambda c: _at_least(c.gain, request.min_gain))
    if request.min_speedup is not None:
        tests.append(lambda c: _at_least(c.speedup, request.min_speedup))
    if request.exclude:
        tests.append(lambda c: c.id not in request.exclude)
    return tests


def _at_least(value: object, floor: float) -> bool:
    found = json_number(value)
    return found is not None and found >= floor


def _scoped(pool: list[PoolRecord], scope: Scope) -> list[tuple[PoolRecord, str, str | None]]:
    """(candidate, reach, symptom strength) of every candidate in ``scope``, in order."""
    tests = _tests(scope)
    kept: list[tuple[PoolRecord, str, str | None]] = []
    for c in pool:
        how = reach(c, scope) if scope.arch else EXACT
        if how is None or not all(test(c) for test in tests):
            continue
        strength = None
        if scope.symptom:
            strength = symptom_match(c, scope)
            if strength is None:
                continue
        kept.append((c, how, strength))
    return kept
