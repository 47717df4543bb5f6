"""The scoped pool: which records a scope reaches, and how each was reached.

The index cache answers in two steps. SQL narrows the records by the columns and
tables it keeps (vendor, arch and every architecture a record names, dsl,
family, type, status, the kernels an operator files under): always a superset of
the scope, so it only saves work. For what is left, a few ranking fields are
read from each entry by SQLite's JSON functions, no entry decoded whole, and the
scope is then decided exactly here, in one place:

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

import json
from dataclasses import dataclass

from gitkb.query.feedback import number
from gitkb.query.scope import NEUTRAL_ARCH, RETIRED_STATUSES, Scope, by_arch

# The entry fields ranking reads, by JSON path; one json_extract call reads them all.
_FIELDS = (
    ("level", "$.level"),
    ("tier", "$.tier"),
    ("worth", "$.worth_score"),
    ("gain", "$.gain_pct"),
    ("speedup", "$.speedup_x"),
    ("title", "$.title"),
    ("architectures", "$.retrieval.scope.architectures"),
    ("operators", "$.retrieval.scope.operators"),
    ("symptoms", "$.retrieval.signals.symptoms"),
    ("bottleneck", "$.retrieval.signals.bottleneck"),
    ("search_text", "$.search_text"),
)
_COLUMNS = "id, path, type, status, vendor, arch, dsl, family"
_EXTRACT = "json_extract(entry, {})".format(", ".join(f"'{p}'" for _, p in _FIELDS))
# An entry SQLite's JSON parser refuses (a NaN json.dumps wrote) is decoded here instead.
_PROJECTION = f"{_COLUMNS}, CASE WHEN json_valid(entry) THEN {_EXTRACT} END, "
_PROJECTION += "CASE WHEN json_valid(entry) THEN NULL ELSE entry END"

EXACT, NEUTRAL, OTHER = "exact", "architecture-neutral", "other-architecture"


@dataclass(slots=True)
class Candidate:
    """One record as ranking sees it: its cache columns, then the entry fields in
    ``_FIELDS`` order."""

    id: str
    path: str
    type: str | None
    status: str | None
    vendor: str | None
    arch: str | None
    dsl: str | None
    family: str | None
    level: object = None
    tier: object = None
    worth: object = None
    gain: object = None
    speedup: object = None
    title: object = None
    architectures: object = None
    operators: object = None
    symptoms: object = None
    bottleneck: object = None
    search_text: object = ""

    @property
    def importance(self) -> float:
        """worth.rank.score as ranking uses it: a number in [0, 1], 0 when missing."""
        value = self.worth
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return 0.0
        return min(1.0, max(0.0, float(value)))


def _candidate(row: tuple) -> Candidate:
    *columns, extracted, whole = row
    if extracted is not None:
        values = json.loads(extracted)
    else:
        entry = json.loads(whole)  # Python's parser takes what SQLite's refused
        values = [_dig(entry, path) for _, path in _FIELDS]
    candidate = Candidate(*columns, *values)
    if not isinstance(candidate.search_text, str):
        candidate.search_text = ""
    return candidate


def _dig(entry: dict, path: str) -> object:
    node: object = entry
    for key in path[2:].split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def candidates(cache, scope: Scope | None) -> list[Candidate]:
    """The records SQL can tell may be in ``scope`` (None: every record), by id."""
    where, params = _narrowing(scope) if scope is not None else ([], [])
    sql = f"SELECT {_PROJECTION} FROM records WHERE id IS NOT NULL AND entry IS NOT NULL"
    sql += "".join(f" AND {w}" for w in where) + " ORDER BY id, path"
    return [_candidate(row) for row in cache.select(sql, tuple(params))]


def _narrowing(scope: Scope) -> tuple[list[str], list]:
    """SQL conditions every record in ``scope`` meets (a superset; ``reach`` decides)."""
    where: list[str] = []
    params: list = []
    request = scope.request
    if scope.arch:
        # written for it: its own arch (indexed with the vendor), or one it lists besides
        own, own_params = by_arch(scope.store_vendors, scope.arch)
        exact = f"({own} OR path IN (SELECT path FROM arches WHERE arch = ?))"
        params += [*own_params, scope.arch]
        if not request.strict_arch:
            # the same vendor's (or no one's) generic records; under --cross-arch, any of its
            # architectures. Both spelled so the (vendor, arch) index answers.
            own_vendor = "(vendor IN (?, 'generic') OR vendor IS NULL)"
            if request.cross_arch:
                exact = f"({exact} OR {own_vendor})"
                params.append(scope.arch_vendor)
            else:
                exact = f"({exact} OR ({own_vendor} AND arch = ?))"
                params += [scope.arch_vendor, NEUTRAL_ARCH]
        where.append(exact)
    for value, condition in (
        (scope.vendor, "vendor IN (?, 'generic')"),
        (scope.dsl, "dsl IN (?, 'any')"),
        (scope.family, "family = ?"),
        (scope.operator, "path IN (SELECT path FROM kernels WHERE name = ?)"),
        (scope.type, "type = ?"),
        (scope.status, "status = ?"),
    ):
        if value:
            where.append(condition)
            params.append(value)
    if not scope.status and not request.include_retired:
        marks = ", ".join("?" * len(RETIRED_STATUSES))
        where.append(f"(status IS NULL OR status NOT IN ({marks}))")
        params += list(RETIRED_STATUSES)
    return where, params


def reach(candidate: Candidate, scope: Scope) -> str | None:
    """How an arch-scoped query reaches a record (``exact`` when it is not arch-scoped), or
    None when it does not."""
    if not scope.arch:
        return EXACT
    listed = candidate.architectures if isinstance(candidate.architectures, list) else []
    if candidate.arch == scope.arch or scope.arch in listed:
        return EXACT
    request = scope.request
    if request.strict_arch:
        return None
    # Neutral within a vendor: a record for any CDNA part is no advice about a Hopper part.
    own = candidate.vendor in (scope.arch_vendor, "generic", None)
    if candidate.arch == NEUTRAL_ARCH:
        return NEUTRAL if scope.arch == NEUTRAL_ARCH or own else None
    return OTHER if request.cross_arch and own else None


def symptom_match(candidate: Candidate, symptom: str) -> str | None:
    """``signal`` when the record holds the symptom as a recorded signal, ``text`` when it
    only mentions it, else None."""
    listed = candidate.symptoms if isinstance(candidate.symptoms, list) else []
    if candidate.bottleneck == symptom or symptom in listed:
        return "signal"
    if symptom.replace("-", " ") in candidate.search_text:
        return "text"
    return None


def scoped(pool: list[Candidate], scope: Scope) -> list[tuple[Candidate, str]]:
    """(candidate, reach) of every candidate in ``scope``, in the pool's order."""
    request = scope.request
    kept: list[tuple[Candidate, str, str | None]] = []
    for c in pool:
        how = reach(c, scope)
        if how is None:
            continue
        if scope.vendor and c.vendor not in (scope.vendor, "generic"):
            continue
        if scope.dsl and c.dsl not in (scope.dsl, "any"):
            continue
        if scope.family and c.family != scope.family:
            continue
        if scope.operator and scope.operator not in (
            c.operators if isinstance(c.operators, list) else []
        ):
            continue
        if scope.type and c.type != scope.type:
            continue
        if scope.level and c.level != scope.level:
            continue
        if scope.status and c.status != scope.status:
            continue
        if not scope.status and not request.include_retired and c.status in RETIRED_STATUSES:
            continue
        if scope.tier and c.tier != scope.tier:
            continue
        if request.min_importance is not None and c.importance < request.min_importance:
            continue
        gain = number(c.gain)
        if request.min_gain is not None and (gain is None or gain < request.min_gain):
            continue
        if request.min_speedup is not None:
            found = number(c.speedup)
            if found is None or found < request.min_speedup:
                continue
        strength = None
        if scope.symptom:
            strength = symptom_match(c, scope.symptom)
            if strength is None:
                continue
        if c.id in request.exclude:
            continue
        kept.append((c, how, strength))
    # A recorded signal beats a passing mention: serving both buries the records that are
    # about this bottleneck under those that only use its words.
    if scope.symptom and any(strength == "signal" for _, _, strength in kept):
        kept = [k for k in kept if k[2] == "signal"]
    return [(c, how) for c, how, _ in kept]
