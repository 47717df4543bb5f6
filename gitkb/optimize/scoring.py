"""Statistics, pre-evaluation checks and the promotion rules of the optimization loop.

Everything here is pure: numbers and source text in, verdicts out.
"""

from __future__ import annotations

import ast
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from gitkb.optimize.bundle import Case

# A profiled duration this much worse than the baseline's blocks a promotion.
PROFILE_REGRESSION_TOLERANCE = 0.01
# A candidate this close to min_speedup is re-measured before it is judged.
NEAR_THRESHOLD = 0.01
# A candidate shorter than this share of the current source is a truncation, not a kernel.
MIN_LENGTH_RATIO = 0.8
NOISY = "noisy timing"  # how the max_cv rule's reason starts


def median(samples: list[float]) -> float:
    ordered = sorted(samples)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def percentile(samples: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def cv(samples: list[float]) -> float:
    """Sample standard deviation (n - 1) over the mean; 0 for a single sample."""
    if len(samples) < 2:
        return 0.0
    mean = sum(samples) / len(samples)
    variance = sum((s - mean) ** 2 for s in samples) / (len(samples) - 1)
    return math.sqrt(variance) / mean


def weighted_geomean(values: list[float], weights: list[float]) -> float:
    """exp(sum w ln v / sum w); nan when there is nothing to average."""
    total = sum(weights)
    if not values or total <= 0:
        return math.nan
    return math.exp(sum(w * math.log(v) for v, w in zip(values, weights, strict=True)) / total)


def source_key(source: str) -> str:
    """SHA-256 of the stripped source: the identity that makes two experiments duplicates."""
    return hashlib.sha256(source.strip().encode("utf-8")).hexdigest()


def _top_level_names(tree: ast.Module) -> set[str]:
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def precheck(source: str, current: str, seen: set[str]) -> str | None:
    """Why a candidate is rejected before it runs, or None when it may be evaluated."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"not valid Python: {exc.msg} (line {exc.lineno})"
    missing = sorted(_top_level_names(ast.parse(current)) - _top_level_names(tree))
    if missing:
        return f"top-level definitions missing: {', '.join(missing)}"
    if len(source.strip()) < MIN_LENGTH_RATIO * len(current.strip()):
        return (
            f"shortened: {len(source.strip())} characters against {len(current.strip())} "
            f"(below {MIN_LENGTH_RATIO:.0%})"
        )
    if source_key(source) in seen:
        return "duplicate of an earlier experiment"
    return None


@dataclass
class CaseScore:
    """One case of one evaluation, scored against the baseline."""

    case_id: str
    protected: bool
    weight: float
    passed: bool
    samples_us: list[float]
    diagnostics: list[str] = field(default_factory=list)
    median_us: float | None = None
    p95_us: float | None = None
    cv: float | None = None
    speedup: float | None = None
    profiled_duration_us: float | None = None
    metrics: dict = field(default_factory=dict)  # what verify reported beside its verdict
    warmup_count: int = 0
    cache_policy: str = "unspecified"
    profile: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        """The TLX agent's case evaluation (``verification``, ``timing`` or null, ``profile``),
        then gitkb's statistics of it."""
        timing = None
        if self.passed:
            timing = {
                "samples_us": self.samples_us,
                "warmup_count": self.warmup_count,
                "cache_policy": self.cache_policy,
            }
        return {
            "case_id": self.case_id,
            "verification": {
                "passed": self.passed,
                "diagnostics": "; ".join(self.diagnostics),
                "metrics": self.metrics,
            },
            "timing": timing,
            "profile": self.profile,
            "protected": self.protected,
            "weight": self.weight,
            "median_us": self.median_us,
            "p95_us": self.p95_us,
            "cv": self.cv,
            "speedup": self.speedup,
            "profiled_duration_us": self.profiled_duration_us,
        }


@dataclass
class Score:
    cases: list[CaseScore]
    aggregate: float | None  # weighted geomean of passing cases' speedups

    def case(self, case_id: str) -> CaseScore:
        return next(c for c in self.cases if c.case_id == case_id)

    @property
    def protected_pass(self) -> bool:
        return all(c.passed for c in self.cases if c.protected)

    def failed_protected(self) -> list[str]:
        return [c.case_id for c in self.cases if c.protected and not c.passed]


def _profiled_duration(profile: dict | None) -> float | None:
    if isinstance(profile, dict):
        value = profile.get("duration_us")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def score(evaluation: dict, cases: Sequence[Case], baseline: Score | None) -> Score:
    """Turn a worker evaluation into per-case statistics; speedups against ``baseline``.

    ``baseline`` None scores the baseline itself (every speedup 1.0).
    """
    by_id = {c["case_id"]: c for c in evaluation.get("cases", [])}
    out = []
    for case in cases:
        raw = by_id.get(case.case_id, {})
        samples = [float(s) for s in raw.get("samples_us") or []]
        passed = bool(raw.get("passed")) and bool(samples)
        entry = CaseScore(
            case_id=case.case_id,
            protected=case.protected,
            weight=case.weight,
            passed=passed,
            samples_us=samples,
            diagnostics=list(raw.get("diagnostics") or []),
            profiled_duration_us=_profiled_duration(raw.get("profile")),
            metrics=raw["metrics"] if isinstance(raw.get("metrics"), dict) else {},
            profile=raw["profile"] if isinstance(raw.get("profile"), dict) else {},
        )
        if isinstance(raw.get("warmup_count"), int) and not isinstance(raw["warmup_count"], bool):
            entry.warmup_count = raw["warmup_count"]
        if isinstance(raw.get("cache_policy"), str):
            entry.cache_policy = raw["cache_policy"]
        if passed:
            entry.median_us = median(samples)
            entry.p95_us = percentile(samples, 0.95)
            entry.cv = cv(samples)
            if baseline is None:
                entry.speedup = 1.0
            else:
                base = baseline.case(case.case_id)
                if base.passed and base.median_us is not None:
                    entry.speedup = base.median_us / entry.median_us
        out.append(entry)
    scored = [(c.speedup, c.weight) for c in out if c.speedup is not None]
    aggregate = weighted_geomean([s for s, _ in scored], [w for _, w in scored])
    return Score(out, None if math.isnan(aggregate) else aggregate)


def pooled(scores: list[Score], cases: Sequence[Case], baseline: Score | None) -> Score:
    """One score over several measurements of one source: each case's samples pooled (it
    passes only where every measurement passed), scored against ``baseline`` as one."""
    response = {
        "cases": [
            {
                "case_id": case.case_id,
                "passed": all(s.case(case.case_id).passed for s in scores),
                "samples_us": [x for s in scores for x in s.case(case.case_id).samples_us],
            }
            for case in cases
        ]
    }
    return score(response, cases, baseline)


@dataclass(frozen=True)
class Verdict:
    promoted: bool
    reasons: list[str]  # why not, when not promoted
    rerun: bool = False  # near the threshold: measure again before judging


def decide(
    candidate: Score,
    baseline: Score,
    best_aggregate: float,
    min_speedup: float,
    max_cv: float,
    allow_rerun: bool = True,
) -> Verdict:
    """The promotion rules; every failed rule is listed."""
    reasons = []
    failed = candidate.failed_protected()
    if failed:
        reasons.append(f"protected case failed: {', '.join(failed)}")
    noisy = [
        f"{c.case_id} cv={c.cv:.3f}"
        for c in candidate.cases
        if c.passed and c.cv is not None and c.cv > max_cv
    ]
    if noisy:
        reasons.append(f"{NOISY} (max_cv {max_cv}): {', '.join(noisy)}")
    for case in candidate.cases:
        base = baseline.case(case.case_id).profiled_duration_us
        mine = case.profiled_duration_us
        if base is not None and mine is not None:
            if mine > base * (1 + PROFILE_REGRESSION_TOLERANCE):
                reasons.append(
                    f"profiled duration of {case.case_id} regressed: {mine:.3f} us "
                    f"against baseline {base:.3f} us"
                )
    aggregate = candidate.aggregate
    if aggregate is None:
        reasons.append("no passing case to aggregate")
        return Verdict(False, reasons)
    if not reasons and allow_rerun and abs(aggregate - min_speedup) <= NEAR_THRESHOLD:
        return Verdict(False, [], rerun=True)
    if aggregate < min_speedup:
        reasons.append(f"aggregate speedup {aggregate:.4f} below min_speedup {min_speedup}")
    if aggregate <= best_aggregate:
        reasons.append(f"aggregate speedup {aggregate:.4f} not above the best {best_aggregate:.4f}")
    return Verdict(not reasons, reasons)
