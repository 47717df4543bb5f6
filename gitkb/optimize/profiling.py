"""When to profile deeper (the TLX escalation rules).

Every correct candidate gets the summary profile. A deep profile is requested
for: the baseline, before any candidate; a candidate within one point of the
promotion threshold (scoring.NEAR_THRESHOLD); a candidate whose benchmark and
summary profile disagree; the current best after a round without a promotion;
a candidate whose hypothesis is about scheduling (stalls, occupancy, spills,
pipelining, warp specialization need the deep counters); and the finalist. Not
for an incorrect or clearly slow candidate.
"""

from __future__ import annotations

import math
import re

from gitkb.optimize.scoring import NEAR_THRESHOLD, Score

# Benchmark and profiled-duration speedups further apart than this (relative) disagree.
DISAGREEMENT = 0.10
_SCHEDULING = re.compile(
    r"schedul|warp[- ]speciali|\bws\b|pipelin|num_stages|\bstages?\b|occupancy|stall|spill|"
    r"register|barrier|async|overlap|latency hiding|software pipelin",
    re.IGNORECASE,
)


def scheduling(hypothesis: str, change: str) -> bool:
    """A hypothesis that needs stall, occupancy, spill or memory-hierarchy evidence."""
    return bool(_SCHEDULING.search(f"{hypothesis} {change}"))


def disagreement(candidate: Score, baseline: Score) -> list[str]:
    """Cases whose benchmark speedup and profiled-duration speedup disagree."""
    found = []
    for case in candidate.cases:
        base = baseline.case(case.case_id).profiled_duration_us
        mine = case.profiled_duration_us
        if not case.passed or case.speedup is None or base is None or mine is None:
            continue
        profiled = base / mine
        if abs(math.log(case.speedup / profiled)) > math.log1p(DISAGREEMENT):
            found.append(f"{case.case_id}: benchmark {case.speedup:.3f}x, profile {profiled:.3f}x")
    return found


def worth_a_deeper_look(candidate: Score, min_speedup: float) -> bool:
    """Correct and not clearly slow: a deep profile could change the decision."""
    return (
        candidate.protected_pass
        and candidate.aggregate is not None
        and candidate.aggregate >= min_speedup - NEAR_THRESHOLD
    )
