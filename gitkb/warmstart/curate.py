"""Curation: which of a kernel's same-page records to offer, in what order.

Pure functions over records and index entries; ``resolve`` does the reading.
The page is GEAK's: one kernel, one product (a gfx id, an NVIDIA product) and
one language. Order (docs/warm-start.md, "Curation"): retracted dropped, floor, strategies whose
diff does not apply to the caller's kernel set aside as reference only, rank by
measured speedup at full precision (more reproductions, then the older GEAK
exp id, break ties), one rank per direction (compared as GEAK does: trimmed and
lowercased; an empty direction stands alone) with the runners-up as alternates,
top N, and bench-key comparability against rank 1 (unknown is not a match).
Hints never reorder: the GEAK followed (iAmir97/GEAK @ a6a9d0e) keeps them
advisory; a later GEAK's ``demote_hinted`` is not followed. Collapsed runners-up
are counted as GEAK counts them: only in the groups that reach the top N.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from gitkb import targets
from gitkb.errors import GitkbError
from gitkb.record import DSLS, scope_of
from gitkb.record.curation import CurationFacts, curation_facts

RETIRED_STATUSES = ("deprecated", "superseded")
# The languages a page can be in: clean-1.3's, and those GEAK keeps that its enum cannot name.
LANGUAGES = (*(d for d in DSLS if d != "any"), "hip", "ck")
ANY_LANGUAGE = "any"
_PREFIXES = ("triton_", "hip_", "ck_", "cuda_", "torch_")
_SUFFIXES = (".py", ".hip", ".cu", ".cpp", "_task")
# What a kernel's file name says about its language: a prefix, or a suffix only one language uses.
_LANGUAGE_PREFIXES = {"triton_": "triton", "hip_": "hip", "ck_": "ck", "cuda_": "cuda"}
_LANGUAGE_SUFFIXES = {".hip": "hip", ".cu": "cuda"}
FUZZY_MIN = 6

# ----------------------------------------------------------------- kernel identity


def canonical_kernel(name: str) -> str:
    """Basename, lowercase, language prefixes and file suffixes stripped."""
    base = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip().lower()
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if base.endswith(suffix) and len(base) > len(suffix):
                base, changed = base[: -len(suffix)], True
        for prefix in _PREFIXES:
            if base.startswith(prefix) and len(base) > len(prefix):
                base, changed = base[len(prefix) :], True
    return base


def kernel_language(name: str) -> str | None:
    """The language a kernel's name states (``triton_rmsnorm.py``, ``rmsnorm.hip``), or None."""
    base = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip().lower()
    for prefix, language in _LANGUAGE_PREFIXES.items():
        if base.startswith(prefix) and len(base) > len(prefix):
            return language
    for suffix, language in _LANGUAGE_SUFFIXES.items():
        if base.endswith(suffix) and len(base) > len(suffix):
            return language
    return None


def _folded(name: str) -> str:
    """``name`` less every character outside a-z and 0-9 (no ``re``: resolve loads none)."""
    return "".join(c for c in name if "a" <= c <= "z" or "0" <= c <= "9")


@dataclass(slots=True)
class KernelMatch:
    tier: str | None  # exact, normalized, fuzzy; None when nothing or ambiguous
    names: set[str] = field(default_factory=set)  # canonical names that count as the kernel
    ambiguous: list[str] = field(default_factory=list)
    on_page: bool = False  # matched among the caller's page's kernels


def related_names(query: str, names: set[str]) -> set[str]:
    """The names any matching tier could pick for ``query``."""
    wanted = canonical_kernel(query)
    folded = _folded(wanted)
    return {
        n for n in names
        if n == wanted or (folded and _folded(n) == folded)
        or (len(folded) >= FUZZY_MIN and len(_folded(n)) >= FUZZY_MIN
            and (_folded(n) in folded or folded in _folded(n)))
    }  # fmt: skip


def match_kernel(query: str, names: set[str]) -> KernelMatch:
    """Match the caller's kernel against the store's canonical kernel names; first tier wins.

    A fuzzy tie between two different kernels is reported, never guessed.
    """
    wanted = canonical_kernel(query)
    if wanted in names:
        return KernelMatch("exact", {wanted})
    folded = _folded(wanted)
    same = {n for n in names if _folded(n) == folded}
    if folded and same:
        return KernelMatch("normalized", same)
    if len(folded) < FUZZY_MIN:
        return KernelMatch(None)
    by_form: dict[str, set[str]] = {}
    for name in names:
        form = _folded(name)
        if len(form) >= FUZZY_MIN and (form in folded or folded in form):
            by_form.setdefault(form, set()).add(name)
    if not by_form:
        return KernelMatch(None)
    best = min(abs(len(f) - len(folded)) for f in by_form)
    closest = sorted(f for f in by_form if abs(len(f) - len(folded)) == best)
    if len(closest) > 1:
        return KernelMatch(None, ambiguous=sorted(min(by_form[f]) for f in closest))
    return KernelMatch("fuzzy", by_form[closest[0]])


def entry_kernels(entry: dict) -> list[str]:
    """The kernel names an index entry files under: its scope's operators, else its family."""
    scope = scope_of(entry)
    listed = scope.get("operators")
    operators = (
        [o for o in listed if isinstance(o, str) and o.strip()] if isinstance(listed, list) else []
    )
    family = scope.get("operator_family")
    names = operators or ([family] if isinstance(family, str) and family.strip() else [])
    return [canonical_kernel(n) for n in names]


# ----------------------------------------------------------------- record facts
# (what a record states: ``gitkb.record.curation``)


def comparable(key: str | None, first: str | None) -> bool:
    """Two numbers compare only over one known bench key: unknown is not a match."""
    return key is not None and key == first


@cache
def page_of(product: str | None, measured: str | None) -> str | None:
    """The product page a record was measured on: the GPU it states it was measured on when
    the target table (or a gfx id) names one, which wins over the product it is filed under;
    else that product's page, a product the table does not know being its own page; None
    when neither names a product."""
    found = targets.identify(measured) if isinstance(measured, str) else None
    if found is not None and found.page:
        return found.page
    if not isinstance(product, str) or product.strip().lower() in ("", ANY_LANGUAGE):
        return None
    found = targets.identify(product)
    if found is None:
        return product.strip().lower()
    return found.page


# ----------------------------------------------------------------- curation


@dataclass(slots=True)
class CodeRecord:
    """A code-carrying record as curation ranks it: its ``facts`` (``gitkb.record.curation``,
    as the index cache keeps them), and the record once read (``loaded``: resolve reads
    only the candidates it serves)."""

    record_id: str
    path: str
    facts: CurationFacts
    retired: bool
    loaded: dict | None = None
    counts: dict = field(default_factory=dict)
    retire_hint: str | None = None
    page: str | None = None
    language: str = ANY_LANGUAGE
    applies: bool | None = None  # whether a strategy's diff applies to the caller's kernel
    alternates: list[CodeRecord] = field(default_factory=list)

    @property
    def record(self) -> dict:
        if self.loaded is None:
            raise GitkbError(f"internal: {self.record_id} was served before it was read")
        return self.loaded

    @property
    def speedup(self) -> float | None:
        return self.facts.speedup

    @property
    def bench_key(self) -> str | None:
        return self.facts.bench_key

    @property
    def direction(self) -> str:
        return self.facts.direction

    @property
    def reproductions(self) -> int:
        return self.facts.reproductions

    @property
    def exp_id(self) -> str:
        """GEAK's exp id (the older one wins a tie); a mined record's is made from its id."""
        return self.facts.exp_id

    def order(self) -> tuple:
        return (-(self.speedup or 0.0), -self.reproductions, self.exp_id, self.record_id)


def code_record(
    record: dict,
    path: str,
    retired: bool,
    counts: dict,
    page: str | None,
    language: str,
    retire_hint: str | None = None,
) -> CodeRecord:
    """A record as curation ranks it, read in full: its facts, and the record."""
    return CodeRecord(
        record_id=record["id"],
        path=path,
        facts=curation_facts(record),
        retired=retired,
        loaded=record,
        counts=counts,
        retire_hint=retire_hint,
        page=page,
        language=language,
    )


def eligible(candidate: CodeRecord, min_speedup: float, include_retired: bool) -> bool:
    """Whether a candidate can be offered at all (a rank or reference only): not retired
    (unless asked for), and at or above the floor."""
    if candidate.retired and not include_retired:
        return False
    return candidate.speedup is not None and candidate.speedup >= min_speedup


@dataclass(slots=True)
class Curated:
    ranks: list[CodeRecord]
    reference_only: list[CodeRecord] = field(default_factory=list)
    retired: int = 0
    below_floor: int = 0
    collapsed: int = 0
    beyond_top_n: int = 0


def curate(
    candidates: list[CodeRecord],
    min_speedup: float,
    top_n: int,
    include_retired: bool,
    applies: Callable[[CodeRecord], bool | None] | None = None,
) -> Curated:
    """The ranks to offer. ``applies`` tells whether a candidate's code fits the caller's
    kernel (None: no kernel to try it on); one that does not is reference only: listed for
    its prose, never a rank, so it costs no verification slot."""
    result = Curated([])
    kept = []
    for candidate in candidates:
        if eligible(candidate, min_speedup, include_retired):
            candidate.applies = applies(candidate) if applies is not None else None
            if candidate.applies is False:
                result.reference_only.append(candidate)
            else:
                kept.append(candidate)
        elif candidate.retired and not include_retired:
            result.retired += 1
        else:
            result.below_floor += 1
    result.reference_only.sort(key=CodeRecord.order)
    groups: dict[str, list[CodeRecord]] = {}
    alone = []
    for candidate in kept:
        if candidate.direction:
            groups.setdefault(candidate.direction, []).append(candidate)
        else:
            alone.append(candidate)
    leaders = list(alone)
    for members in groups.values():
        members.sort(key=CodeRecord.order)
        leader, *rest = members
        leader.alternates = rest
        leaders.append(leader)
    leaders.sort(key=CodeRecord.order)
    result.ranks = leaders[:top_n]
    result.collapsed = sum(len(c.alternates) for c in result.ranks)
    result.beyond_top_n = max(0, len(leaders) - top_n)
    return result
