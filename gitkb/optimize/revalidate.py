"""Final revalidation: the finalist measured again, with fresh samples and a deep profile,
must pass every promotion rule again against the baseline (protected cases,
``min_speedup``, ``max_cv``, no material profiled regression). A finalist that
was promoted on a lucky measurement fails here: the run ends without a winner,
the reasons in ``result.json`` and the trace, and nothing is committed.
"""

from __future__ import annotations

from gitkb.optimize import scoring
from gitkb.optimize.evaluate import Measurement, measure
from gitkb.optimize.experiments import fmt, profiler_evidence
from gitkb.optimize.setup import RunSetup
from gitkb.optimize.state import BestSoFar
from gitkb.optimize.trace_writer import memory_record

FINAL_ID = "final"


def _judge(
    setup: RunSetup, best: BestSoFar, base: scoring.Score, exp_id: str
) -> tuple[Measurement, bool, list[str], list[str]]:
    final = measure(
        setup, best.source, exp_id, "deep", "finalist revalidation before the commit", base
    )
    if final.score is None:
        return final, False, final.diagnostics, []
    verdict = scoring.decide(
        final.score,
        base,
        1.0,  # against the baseline: the finalist must still beat it
        setup.budget.min_speedup,
        setup.budget.max_cv,
        allow_rerun=False,
    )
    return final, verdict.promoted, verdict.reasons, final.diagnostics


def revalidate(setup: RunSetup, best: BestSoFar, base: scoring.Score) -> tuple[Measurement, dict]:
    """Re-measure ``best`` against the baseline's score ``base``; returns the measurement
    and the verdict block (``passed``, ``reasons``, ``aggregate_speedup``). When timing
    noise is the only rule it fails, one more set of fresh samples decides (a loaded
    machine is not evidence either way)."""
    final, passed, reasons, diagnostics = _judge(setup, best, base, FINAL_ID)
    if not passed and reasons and all(r.startswith(scoring.NOISY) for r in reasons):
        setup.say(f"[gitkb] final {best.id} timing unstable ({reasons[0]}): measuring it again")
        final, passed, reasons, diagnostics = _judge(setup, best, base, f"{FINAL_ID}-2")
    if not passed:
        reasons = reasons + diagnostics
    block = {
        "experiment": best.id,
        "passed": passed,
        "reasons": reasons,
        "aggregate_speedup": final.score.aggregate if final.score is not None else None,
        "promoted_at": best.aggregate,
    }
    if passed:
        setup.say(
            f"[gitkb] final {best.id} revalidated: aggregate "
            f"{fmt(block['aggregate_speedup'], 4)}x (promoted at {fmt(best.aggregate, 4)}x)"
        )
        return final, block
    why = "; ".join(reasons)
    failed = dict(
        best.experiment, status="rejected", diagnostics=[f"finalist revalidation failed: {why}"]
    )
    # v0 (adopted warm-start code) is the trace's start, no step to revert; a later version
    # exists only once the trace has started.
    start_source = setup.trace.start_source
    if best.version and start_source is not None:
        setup.trace.revalidation_failed(
            best.version,
            start_source,
            memory_record(
                best.version,
                failed,
                final.score,
                base,
                None,
                profiler_evidence(setup, final.profiles),
                setup.trace.reference,
            ),
        )
    setup.say(f"[gitkb] final {best.id} status=revalidation_failed reason={why[:300]!r}")
    return final, block
