"""What a query asks, resolved against the store: scope is a hard identity.

Every scope filter is checked against the values the store itself holds before
anything is ranked. A value the store does not hold fails closed (exit 2) with the
near misses, because a caller guessing ``moe`` for ``moe-expert-compute`` should be
corrected, and an empty answer would read as "no knowledge here". Spelling is
forgiven (case and punctuation folded: ``cute-dsl`` finds ``cutedsl``), nothing
more. ``--arch`` takes what a runtime reports (``sm_90``, ``9.0``, ``H20``,
``gfx942``, a device name) and resolves it through the target tables; a real
architecture the store holds no records for is a gap in the store, said as such.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Set
from dataclasses import dataclass, field, replace

from gitkb import targets
from gitkb.errors import GitkbError, echoed
from gitkb.record.worth import TIERS
from gitkb.store.cache import vocabulary
from gitkb.store.cache.index_cache import IndexCache
from gitkb.targets import vendor_of

RANK_MODES = ("blend", "text", "importance")
# Statuses a query leaves out unless asked (--status, --include-retired): taken back.
RETIRED_STATUSES = ("deprecated", "superseded")
NEUTRAL_ARCH = "generic"
# Query words for "architecture-neutral", not hardware: they name the generic arch.
_NEUTRAL_WORDS = ("any", "neutral", "architecture-neutral")
# Past this many known values an error names the near misses and how to search, not all.
_LISTED_AT_MOST = 25
DEFAULT_LIMIT = 8
DEFAULT_FALLBACK_RATIO = 0.10

_FOLDED = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")  # what ``fold`` keeps

LISTABLE = ("vendor", "arch", "dsl", "family", "operator", "type", "symptom", "tag", "technique")


@dataclass(slots=True, frozen=True)
class Request:
    """A query as the caller states it (CLI flags, an MCP call, the optimizer)."""

    terms: tuple[str, ...] = ()
    vendor: str | None = None
    arch: str | None = None
    dsl: str | None = None
    family: str | None = None
    operator: str | None = None
    type: str | None = None
    level: str | None = None
    status: str | None = None
    tier: str | None = None
    symptom: str | None = None
    technique: str | None = None  # a canonical technique (``num-warps``, ``num-warps-up``)
    strict_arch: bool = False
    cross_arch: bool = False
    any_term: bool = False
    exclude: frozenset[str] = frozenset()
    min_importance: float | None = None
    min_gain: float | None = None
    min_speedup: float | None = None
    include_retired: bool = False
    rank: str = "blend"
    weight_importance: float = 1.0
    limit: int = DEFAULT_LIMIT
    brief: bool = False
    max_bytes: int | None = None
    fallback: bool = True
    fallback_ratio: float = DEFAULT_FALLBACK_RATIO
    seed: int | None = None

    def checked(self) -> Request:
        """The request with its numbers checked; a bad one is a usage error (exit 2)."""
        for name in ("min_importance", "min_gain", "min_speedup", "weight_importance"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise GitkbError(f"--{name.replace('_', '-')} must be a number, not {value}", 2)
        if self.weight_importance < 0:
            raise GitkbError("--weight-importance must not be negative", 2)
        if self.limit < 1:
            raise GitkbError(f"--limit must be at least 1, got {self.limit}", 2)
        if self.max_bytes is not None and self.max_bytes < 1:
            raise GitkbError(f"--max-bytes must be at least 1, got {self.max_bytes}", 2)
        if not 0 < self.fallback_ratio <= 1:
            raise GitkbError(f"--fallback-ratio must be in (0, 1], got {self.fallback_ratio}", 2)
        if self.rank not in RANK_MODES:
            raise GitkbError(f"--rank must be one of {', '.join(RANK_MODES)}", 2)
        if self.tier is not None and self.tier not in TIERS:
            raise GitkbError(f"--tier must be one of {', '.join(TIERS)}", 2)
        words = len(normalize_terms(self.terms))
        if words > MAX_TERMS:
            raise GitkbError(
                f"a query holds at most {MAX_TERMS} words; this one holds {words:,}", 2
            )
        return self


@dataclass(slots=True, frozen=True)
class Scope:
    """A request resolved against the store: every filter in the store's own spelling."""

    request: Request
    terms: tuple[str, ...]
    vendor: str | None
    arch: str | None
    arch_vendor: str | None  # the vendor whose architecture-neutral records an arch query takes
    dsl: str | None
    family: str | None
    operator: str | None
    type: str | None
    level: str | None
    status: str | None
    tier: str | None
    symptom: str | None
    technique: str | None = None
    store_vendors: tuple[str, ...] = ()  # every vendor the store holds (index lookups by arch)
    symptom_indexed: bool = True  # the store holds the symptom as a recorded signal
    symptom_alternatives: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    def without(self, name: str) -> Scope:
        """This scope with one filter dropped (the zero-match diagnosis)."""
        if name == "terms":
            return replace(self, terms=())
        return replace(self, **{name: None})

    def widened(self) -> Scope:
        """This scope reaching the vendor's other architectures too (``--cross-arch``)."""
        return replace(self, request=replace(self.request, cross_arch=True))


# Each word is one condition of the cache's SQL, and SQLite refuses an expression over
# 1,000 deep: a longer query is refused in words, before any SQL (one word of any length
# is answered).
MAX_TERMS = 256


def normalize_terms(terms: Iterable[str]) -> tuple[str, ...]:
    """Free-text terms: split on whitespace, lowercased."""
    return tuple(t.lower() for t in " ".join(terms).split())


def fold(value: str) -> str:
    """A token reduced to its letters and digits, lowercased: spelling-insensitive equality."""
    return "".join(c for c in value.strip().lower() if c in _FOLDED)


def near_misses(value: str, known: Iterable[str]) -> list[str]:
    """The known values a rejected one most likely meant: containment either way, then
    close spellings."""
    ordered = sorted(known)
    wanted = value.strip().lower()
    near = [k for k in ordered if wanted and (wanted in k.lower() or k.lower() in wanted)]
    for close in difflib.get_close_matches(wanted, ordered, n=5, cutoff=0.6):
        if close not in near:
            near.append(close)
    return near[:8]


class Vocabulary:
    """The store's own values for each filter, asked only as far as a check needs: a value
    the store holds is one indexed lookup; the whole vocabulary is read for a miss."""

    def __init__(self, cache: IndexCache) -> None:
        self.cache = cache
        self._values: dict[str, Set[str]] = {}

    def vendors(self) -> tuple[str, ...]:
        """Every vendor value the store holds."""
        if "vendor" not in self._values:
            self._values["vendor"] = vocabulary.vendors(self.cache)
        return tuple(sorted(self._values["vendor"]))

    def holds(self, name: str, value: str) -> bool:
        if name == "arch":
            return vocabulary.holds_arch(self.cache, self.vendors(), value)
        if name in vocabulary.SCOPE_COLUMNS:
            return vocabulary.holds(self.cache, name, value)
        return vocabulary.holds_listed(self.cache, name, value)

    def values(self, name: str) -> Set[str]:
        if name not in self._values:
            if name in vocabulary.SCOPE_COLUMNS:
                self._values[name] = vocabulary.column_values(self.cache, name)
            else:
                self._values[name] = vocabulary.listed_values(self.cache, name)
        return self._values[name]

    def resolve(self, name: str, value: str | None) -> str | None:
        """The store's spelling of ``value``; an unknown value fails closed (exit 2)."""
        if value is None or self.holds(name, value):
            return value
        known = self.values(name)
        folded = {fold(k): k for k in sorted(known)}
        if fold(value) in folded:
            return folded[fold(value)]
        raise GitkbError(unknown_value(name, value, known), 2)


def unknown_value(name: str, value: str, known: Set[str]) -> str:
    near = near_misses(value, known)
    said = f"; did you mean: {', '.join(near)}?" if near else ""
    if len(known) > _LISTED_AT_MOST:
        return (
            f"unknown {name} {echoed(value)}{said} ({len(known)} known values; search them with "
            f"--list-{_LIST_FLAGS[name]} --like SUBSTRING)"
        )
    return f"unknown {name} {echoed(value)}{said} (known: {', '.join(sorted(known)) or 'none'})"


_LIST_FLAGS = {
    "vendor": "vendors",
    "arch": "arch",
    "dsl": "dsl",
    "family": "family",
    "operator": "operators",
    "type": "type",
    "symptom": "symptoms",
    "tag": "tags",
    "technique": "techniques",
}


def resolve_arch(vocabulary: Vocabulary, value: str) -> str:
    """A runtime's architecture token -> the store's arch name (see the module docstring)."""
    wanted = value.strip().lower()
    if wanted and vocabulary.holds("arch", wanted):
        return wanted
    if wanted in _NEUTRAL_WORDS:
        family = NEUTRAL_ARCH
    else:
        hardware = targets.runtime(value)
        family = hardware.arch if hardware else None
    if family and vocabulary.holds("arch", family):
        return family
    known = vocabulary.values("arch")
    if family:
        raise GitkbError(
            f"no records for arch {echoed(value)}: it resolves to {family}, which this store holds "
            f"no records for (it has: {', '.join(sorted(known))}). A gap in the store, not a "
            "bad query: another architecture's records do not apply here",
            2,
        )
    near = near_misses(value, known)
    said = f"; did you mean: {', '.join(near)}?" if near else ""
    raise GitkbError(
        f"unknown arch {echoed(value)}{said} (store: {', '.join(sorted(known))}; also takes a "
        "compute capability such as sm_90 or 9.0, a product such as h20 or mi300x, or a gfx "
        "id such as gfx942)",
        2,
    )


def resolve(cache: IndexCache, request: Request) -> Scope:
    """The request's scope in the store's spelling; raises (exit 2) on an unknown value."""
    vocabulary = Vocabulary(cache)
    arch = resolve_arch(vocabulary, request.arch) if request.arch else None
    scope = Scope(
        request=request,
        terms=normalize_terms(request.terms),
        vendor=vocabulary.resolve("vendor", request.vendor),
        arch=arch,
        arch_vendor=vendor_of(arch) if arch else None,
        dsl=vocabulary.resolve("dsl", request.dsl),
        family=vocabulary.resolve("family", request.family),
        operator=vocabulary.resolve("operator", request.operator),
        type=vocabulary.resolve("type", request.type),
        level=request.level,
        status=request.status,
        tier=request.tier,
        symptom=request.symptom,
        technique=vocabulary.resolve("technique", request.technique),
        store_vendors=vocabulary.vendors(),
    )
    if request.symptom and not vocabulary.holds("symptom", request.symptom):
        # Symptoms stay free text on purpose (a profiler's phrase need not be spelled the
        # store's way), but saying so keeps a text match from passing for a signal match.
        near = near_misses(request.symptom, vocabulary.values("symptom"))
        hint = (
            f"; closest indexed signals: {', '.join(near)}"
            if near
            else "; list the indexed ones with --list-symptoms"
        )
        note = (
            f"{request.symptom!r} is not an indexed symptom; it matched as free text only, "
            f"so hits may be about a different problem{hint}"
        )
        scope = replace(scope, symptom_indexed=False, symptom_alternatives=tuple(near))
        scope.notes.append(note)
    return scope


def listing(cache: IndexCache, name: str, like: str | None = None) -> tuple[list[str], list[str]]:
    """The store's values of one vocabulary (``--list-*``): selectable tokens, then the
    free-text values (a sentence is matchable as text, not selectable), ``like`` filtering."""
    values = sorted(Vocabulary(cache).values(name))
    if like:
        needle = like.strip().lower()
        values = [v for v in values if needle in v.lower()]
    tokens = [v for v in values if " " not in v and len(v) <= 60]
    prose = [v for v in values if v not in tokens]
    return tokens, prose
