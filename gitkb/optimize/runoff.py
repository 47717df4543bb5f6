"""The final pick's rules (``loop._Loop.runoff``): which runners-up contend beside the best,
one score over a source's back-to-back passes, and which contender wins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitkb.optimize import scoring
from gitkb.optimize.bundle import Budget, Case
from gitkb.optimize.evaluate import Measurement
from gitkb.optimize.providers import Candidate
from gitkb.optimize.scoring import Score
from gitkb.optimize.state import BestSoFar

# The best and up to this many runners-up are measured again back to back.
CONTENDERS = 2
PASSES = 2  # the second pass in reverse order, so neither side always runs first
# A runner-up first measured below this share of the best is not re-measured: one sample
# under load can be off by a third, not by more.
BAND = 0.6


@dataclass(frozen=True)
class Contender:
    """A correct candidate measured once before: its first aggregate, experiment and code."""

    aggregate: float
    exp_id: str
    candidate: Candidate
    source: str


def contenders(
    measured: list[tuple[float, str, Candidate, str]], best: BestSoFar
) -> list[Contender]:
    """The closest runners-up of ``best`` (``RunState.measured``), one per distinct code."""
    keys, out = {scoring.source_key(best.source)}, []
    for aggregate, exp_id, candidate, source in sorted(measured, key=lambda m: -m[0]):
        key = scoring.source_key(source)
        if key in keys or aggregate < best.aggregate * BAND:
            continue
        keys.add(key)
        out.append(Contender(aggregate, exp_id, candidate, source))
    return out[:CONTENDERS]


def pooled(
    found: list[Measurement], cases: Sequence[Case], base: Score
) -> tuple[Measurement, Score] | None:
    """One measurement over a source's passes, with its score (None unless every pass
    measured)."""
    scores = [m.score for m in found if m.score is not None]
    if len(scores) < len(found):
        return None
    last = found[-1]
    score = scoring.pooled(scores, cases, base)
    return Measurement(score, last.diagnostics, last.metrics, last.profiles, last.level), score


def pick(
    runners: list[Contender],
    found: list[tuple[Measurement, Score] | None],
    fresh: float | None,
    base: Score,
    budget: Budget,
) -> tuple[list[dict], tuple[Contender, Measurement, float] | None]:
    """Each contender's figures, and the one whose pooled score passes the promotion rules
    against the best's fresh aggregate by the most (its measurement and aggregate)."""
    ran: list[dict] = []
    picked: tuple[Contender, Measurement, float] | None = None
    for runner, pooled_score in zip(runners, found, strict=True):
        again = pooled_score[1].aggregate if pooled_score is not None else None
        won = pooled_score is not None and scoring.decide(
            pooled_score[1], base, fresh or 0.0, budget.min_speedup, budget.max_cv,
            allow_rerun=False,
        ).promoted  # fmt: skip
        ran.append({"experiment": runner.exp_id, "first": runner.aggregate, "won": won,
                    "again": again})  # fmt: skip
        if not won or pooled_score is None or again is None:
            continue
        if picked is None or again > picked[2]:
            picked = (runner, pooled_score[0], again)
    return ran, picked
