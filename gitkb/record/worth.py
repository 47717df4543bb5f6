"""The store's scoring rule for ``worth.rank`` (docs/record-format.md §9), the one mining, the
importers, the cards and query feedback all use: null prior and counter values dropped,
``n_independent_runs`` <= 1 dropped; ``recency_decay`` is its clock half."""

from __future__ import annotations

import math

FORMULA = (
    "clamp(prior + 0.35*signed_feedback*confidence + usage_bonus) * recency_decay(half_life=90d)"
)
BUILDER_VERSION = "opt-trace-0.1"
TIERS = ("proven", "promising", "provisional", "cautionary")
HALF_LIFE_DAYS = 90.0
STRATEGY_PRIOR = 0.30  # a strategy whose prior has no parts
ANTI_STRATEGY_PRIOR = 0.45  # an anti-strategy's prior before its own parts


def _clamp(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return max(lo, min(hi, x))


def _stretch(k: float) -> float:
    return _clamp((k - 0.10) / 0.70)


def _num(d: dict, key: str) -> float | None:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def prior_score(record_type: str, prior: dict) -> float:
    kept = _num(prior, "corpus_kept_ratio")
    if record_type == "anti-strategy":
        score = ANTI_STRATEGY_PRIOR
        r = _num(prior, "rediscovered") or 1
        if r > 1:
            score += 0.30 * _clamp(math.log(r) / math.log(10))
        n = _num(prior, "n_operators") or 1
        if n > 1:
            score += 0.20 * _clamp(math.log(n) / math.log(5))
        if kept is not None:
            score += 0.25 * _clamp(1 - _stretch(kept))
        return _clamp(score)
    if record_type == "technique-card":
        return 0.55 if kept is None else _clamp(0.55 + 0.30 * _clamp(abs(kept - 0.5) / 0.35))
    if record_type == "symptom-card":
        s = _num(prior, "n_operators") or 0
        return _clamp(0.55 + 0.25 * _clamp(math.log(1 + s) / math.log(11)))
    if record_type == "reference-kernel":
        x = _num(prior, "best_speedup_x")
        bonus = 0.15 * _clamp(math.log(x) / math.log(300)) if x is not None and x > 1 else 0.0
        return _clamp(0.45 + bonus)
    if record_type == "doc":
        return 0.40
    parts: list[tuple[float, float]] = []
    gain = _num(prior, "step_gain_pct")
    if gain is not None:
        parts.append((_clamp(math.log(1 + max(0.0, gain)) / math.log(101)), 1.5))
    if kept is not None:
        parts.append((_stretch(kept), 1.0))
    runs = _num(prior, "n_independent_runs")
    if runs:
        parts.append((_clamp(math.log(max(1.0, runs)) / math.log(4)), 0.5))
    if not parts:
        return STRATEGY_PRIOR
    return _clamp(sum(v * w for v, w in parts) / sum(w for _, w in parts))


def rank(record: dict) -> dict:
    """The record's ``worth.rank`` {score, tier, formula, builder_version}."""
    worth = record.get("worth") or {}
    track = worth.get("track") or {}
    prior = {k: v for k, v in (track.get("prior") or {}).items() if v is not None}
    if (_num(prior, "n_independent_runs") or 0) <= 1:
        prior.pop("n_independent_runs", None)
    counters = {k: v for k, v in (track.get("counters") or {}).items() if v is not None}
    record_type = record.get("type") or ""
    prior_value = prior_score(record_type, prior)
    rate = _num(prior, "corpus_ladder_ratio")
    if rate is None:
        rate = _num(prior, "corpus_kept_ratio")
    if rate is not None and record_type == "anti-strategy":
        rate = 1 - rate
    good = int(_num(counters, "verified_effective") or 0)
    bad = int(_num(counters, "verified_ineffective") or 0)
    n = good + bad
    signed = confidence = 0.0
    if n:
        p = (good + 1) / (n + 2)
        rho = 0.5 if rate is None else _clamp(rate, 0.05, 0.95)
        room = 1 - rho if p >= rho else rho
        signed = _clamp((p - rho) / max(room, 1e-6), -1.0, 1.0)
        confidence = _clamp(n / 8)
    usage = max(_num(counters, "served_count") or 0, _num(counters, "query_count") or 0)
    bonus = 0.05 * _clamp(math.log(1 + usage) / math.log(50))
    score = round(_clamp(prior_value + 0.35 * signed * confidence + bonus), 4)
    decided = confidence >= 0.5
    basis = (worth.get("gain") or {}).get("basis")
    if record_type == "anti-strategy" or (decided and signed <= -0.5):
        tier = "cautionary"
    elif basis != "measured":
        tier = "provisional"
    elif decided and signed >= 0.5:
        tier = "proven"
    else:
        tier = "promising"
    return {"score": score, "tier": tier, "formula": FORMULA, "builder_version": BUILDER_VERSION}


def recency_decay(last_ts: float | None, now: float) -> float:
    """The factor a score keeps ``now`` since its record was last used (``last_ts``, Unix
    seconds): 1 when just used or never, halving towards 0.5 every ``HALF_LIFE_DAYS``."""
    if last_ts is None or now <= last_ts:
        return 1.0
    return 0.5 + 0.5 * 0.5 ** ((now - last_ts) / 86400 / HALF_LIFE_DAYS)
