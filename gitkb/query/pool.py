"""The scoped pool: which records a scope reaches, and how each was reached.

The index cache answers in two steps. Its columns narrow the records
(``gitkb.store.queries.Narrowing``: vendor, arch and every architecture a record
names, dsl, family, type, status, the kernels an operator files under): always a
superset of the scope, so it only saves work. What is left comes back with the
ranking fields the cache keeps as columns, no entry decoded, and the scope is then
decided exactly here, in one place:

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
from gitkb.store.queries import ArchWanted, Narrowing, RankRow, rank_rows, strings

EXACT, NEUTRAL, OTHER = "exact", "architecture-neutral", "other-architecture"


class PoolRecord(RankRow):
    """One record as ranking sees it: the cache's ranking columns (``worth``, ``tier`` and
    ``speedup`` may be refolded from feedback and the record before ranking). RankRow's
    fields and slots: nothing of its own to generate."""

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
    return (*scope.terms, *((scope.symptom.replace("-", " "),) if scope.symptom else ()))


def candidates(cache, scope: Scope, text_matches_only: bool = False) -> list[PoolRecord]:
    """The records the cache's columns can tell may be in ``scope``, by id; with
    ``text_matches_only``, only those the scope's terms match (``rank.text_hits``). Not
    under a symptom: whether any record holds it as a signal decides the pool."""
    holding = scope.terms if text_matches_only and not scope.symptom else ()
    any_term = scope.request.any_term
    return rank_rows(cache, _narrowing(scope), texts(scope), PoolRecord, holding, any_term)


def _narrowing(scope: Scope) -> Narrowing:
    """What every record in ``scope`` meets (a superset; ``reach`` and ``scoped`` decide)."""
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


def scoped(pool: list[PoolRecord], scope: Scope) -> list[tuple[PoolRecord, str]]:
    """(candidate, reach) of every candidate in ``scope``, in the pool's order."""
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
    # A recorded signal beats a passing mention: serving both buries the records that are
    # about this bottleneck under those that only use its words.
    if scope.symptom and any(strength == "signal" for _, _, strength in kept):
        kept = [k for k in kept if k[2] == "signal"]
    return [(c, how) for c, how, _ in kept]
