"""The ratchet ladder: which versions set a new best-so-far, which are dead-ends, which is final.

Rules (docs/trace-format.md, rules 2-3 and §6.3): a milestone needs its own code commit, an
explicit or absent-but-not-failing correctness and gate, a positive geomean, and a gain
of at least 1.5% over the best so far; carry-forward numbers and ties never count. The
terminal reference kernel is the newest code-bearing, non-reverted version with a
complete positive measurement and explicit PASS correctness and quality gate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitkb.trace.memory import VersionRow

MILESTONE_PCT = 1.5
MEGA_PCT = 20.0
REBASELINE_FACTOR = 5.0
DEADEND_MIN_CHARS = 80

# Infrastructure words: matched in the subject and the gate failure only (edge 6),
# as whole words, so prose such as "tested in the sandbox" in a body cannot reject a step.
_INFRA = re.compile(
    r"\b(infra|infrastructure|sandbox|outage|not_run|no_gpu|machine_down|unavailable)\b",
    re.IGNORECASE,
)
_NO_CHANGE = re.compile(
    r"NO CHANGE|NO_OP|falsified|flat[- ]within[- ]noise|within noise|no actionable lever"
    r"|no improvement",
    re.IGNORECASE,
)


@dataclass
class Step:
    version: str
    n: int
    kind: str  # baseline, milestone, mega, deadend, rejected
    reason: str = ""
    improve_pct: float | None = None  # vs the best so far, 2 decimals
    best_before: float | None = None
    geomean_pct: float | None = None  # the geomean delta, when an authoritative figure rules
    authoritative: bool = False  # improve_pct is the long-horizon supervisor's verified gain


@dataclass
class Ladder:
    steps: list[Step]
    final: int | None  # the terminal reference kernel's version number
    best: float | None

    def __post_init__(self) -> None:
        self._by_n = {s.n: s for s in self.steps}
        self.milestones = [s for s in self.steps if s.kind in ("baseline", "milestone", "mega")]
        self.deadends = [s for s in self.steps if s.kind == "deadend"]

    def step(self, n: int) -> Step | None:
        return self._by_n.get(n)

    def kind(self, n: int) -> str:
        step = self._by_n.get(n)
        return step.kind if step is not None else "rejected"


def _infra(row: VersionRow) -> bool:
    if row.long_horizon_status == "blocked":
        return True
    return bool(_INFRA.search(row.subject) or _INFRA.search(row.gate_failure))


def _rejection(row: VersionRow) -> str | None:
    if _infra(row):
        return "infrastructure"
    if row.carry_forward:
        return "carry-forward is not a measurement"
    if row.correctness is not None and row.correctness != "PASS":
        return "incorrect"
    if row.gate is not None and row.gate != "PASS":
        return "gate-fail"
    if row.geomean is None:
        return "no usable geomean"
    if row.code_sha is None:
        return "no code commit"
    return None


def build_ladder(rows: list[VersionRow]) -> Ladder:
    steps: list[Step] = []
    best: float | None = None
    for row in rows:
        step = Step(row.version, row.n, "rejected")
        steps.append(step)
        if row.reverted and row.has_commit:
            if _infra(row):
                step.reason = "infrastructure"
            elif (
                row.deadend_items
                or len(row.text) > DEADEND_MIN_CHARS
                or any(p and p["explanation"] for p in row.pitfalls)
            ):
                step.kind = "deadend"
            else:
                step.reason = "reverted, nothing said"
            continue
        if row.long_horizon_status and row.carry_forward and not _infra(row):
            # A long-horizon episode that promoted nothing: its rejected experiments
            # may still be dead-ends (granular anti-strategies, rule 5).
            if any(_rejected_experiment(e) for e in row.experiments):
                step.kind = "deadend"
                continue
        reason = _rejection(row)
        if reason:
            step.reason = reason
            continue
        geo = row.geomean
        if best is None:
            step.kind, best = "baseline", geo
            continue
        step.best_before = best
        if geo > best * REBASELINE_FACTOR:
            step.reason = "re-baselining (over 5x the best so far)"
            continue
        measured = (best - geo) / best * 100.0
        # A promotion's verified same-allocation gain outranks the geomean delta
        # (docs/trace-format.md §5).
        step.authoritative = row.promotion and row.improvement_pct is not None
        improve = row.improvement_pct if step.authoritative else measured
        step.improve_pct = round(improve, 2)
        step.geomean_pct = round(measured, 2)
        if improve >= MILESTONE_PCT and not _NO_CHANGE.search(row.text):
            step.kind = "mega" if improve >= MEGA_PCT else "milestone"
            best = min(best, geo)
        elif improve > 0:
            best = min(best, geo)  # the floor moves, but a step claiming no change owns nothing
            step.reason = (
                "declares no change"
                if improve >= MILESTONE_PCT
                else f"under {MILESTONE_PCT}% ({step.improve_pct:.2f}%)"
            )
        else:
            step.reason = f"no gain over the best so far ({step.improve_pct:.2f}%)"
    return Ladder(steps, _terminal(rows), best)


def _rejected_experiment(experiment: dict) -> bool:
    decision = str(experiment.get("decision") or "").lower()
    return decision in ("revert", "reject_and_continue", "pivot", "") or experiment.get(
        "result"
    ) in (None, "")


def _terminal(rows: list[VersionRow]) -> int | None:
    """Rule 3: newest code-bearing, non-reverted, complete positive PASS measurement."""
    for row in reversed(rows):
        if (
            row.code_sha
            and not row.reverted
            and not row.carry_forward
            and row.geomean
            and row.measurement_status in (None, "complete")
            and row.correctness == "PASS"
            and row.gate == "PASS"
        ):
            return row.n
    return None
