"""Bundle validation before the loop (the TLX checklist).

The untouched kernel must build and pass every protected case; its timing
samples must be stable within ``max_cv``; and a deliberately broken candidate
(the baseline with every top-level function and class made to raise, or one
that raises on import when there are none) must be rejected by build or
verify. A bundle that fails any of these is refused with the reason (exit 1),
the output folder kept for inspection.
"""

from __future__ import annotations

import ast

from gitkb.errors import GitkbError
from gitkb.optimize import outputs
from gitkb.optimize.evaluate import Measurement, measure
from gitkb.optimize.setup import Run

BROKEN_ID = "bundle-check"
RAISER = "__gitkb_broken__"


def broken_candidate(source: str) -> str:
    """``source`` with every top-level function and class rebound to one that raises."""
    names = [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    message = "gitkb bundle validation: a deliberately broken kernel"
    block = ["", "", f"# {message}: the harness must reject it."]
    if not names:
        return source + "\n".join([*block, f"raise RuntimeError({message!r})", ""])
    block += [f"def {RAISER}(*args, **kwargs):", f"    raise RuntimeError({message!r})", ""]
    block += [f"{name} = {RAISER}" for name in names]
    return source + "\n".join([*block, ""])


def _noisy(measurement: Measurement, max_cv: float) -> str:
    cases = [c for c in measurement.score.cases if c.passed and c.cv > max_cv]
    return ", ".join(f"{c.case_id} cv={c.cv:.3f}" for c in cases)


def _rejected_by(broken: Measurement) -> str:
    if broken.measured:
        return "verify"
    if any(d.startswith("build failed") for d in broken.diagnostics):
        return "build"
    return "the harness (it did not complete)"


def _refuse(run: Run, base: Measurement, stopping: str, why: str, exp_id: str) -> None:
    outputs.write(run, outputs.Ending(stopping), base)
    raise GitkbError(f"{why} (details: {run.output / 'experiments' / exp_id})")


def validate(run: Run) -> Measurement:
    """Measure the baseline and check the bundle; returns the baseline measurement."""
    budget = run.budget
    base = measure(run, run.baseline_source, "baseline", "deep", "baseline", None)
    if not base.measured or not base.score.protected_pass:
        failed = base.score.failed_protected() if base.measured else []
        # One line: each diagnostic's first line; the harness's traceback stays on file.
        why = "; ".join(d.strip().splitlines()[0] for d in base.diagnostics if d.strip())
        why = why or f"protected cases failed: {', '.join(failed)}"
        _refuse(
            run,
            base,
            "baseline_failed",
            f"the baseline does not pass its protected cases: {why[:500]}",
            "baseline",
        )
    noisy = _noisy(base, budget.max_cv)
    if noisy:
        # Noise is often a passing load on the machine: one fresh set of samples decides.
        run.say(f"[gitkb] baseline timing unstable ({noisy}): measuring it again")
        again = measure(run, run.baseline_source, "baseline-2", "deep", "baseline again", None)
        if again.measured and again.score.protected_pass and not _noisy(again, budget.max_cv):
            base = again
        else:
            _refuse(
                run,
                base,
                "baseline_unstable",
                f"the baseline's timing is not stable within max_cv {budget.max_cv}: {noisy}, "
                "twice (stabilize the benchmark, or raise --max-cv)",
                "baseline-2",
            )
    broken = measure(
        run, broken_candidate(run.baseline_source), BROKEN_ID, "summary",
        "a deliberately broken candidate: build or verify must reject it", base.score,
    )  # fmt: skip
    accepted = broken.measured and all(c.passed for c in broken.score.cases)
    run.validation = {
        "baseline_builds": True,
        "protected_cases_pass": True,
        "baseline_max_cv": max((c.cv for c in base.score.cases if c.passed), default=None),
        "broken_candidate_rejected": not accepted,
        "broken_candidate_rejected_by": None if accepted else _rejected_by(broken),
        "broken_candidate_diagnostics": broken.diagnostics[:3],
    }
    if accepted:
        _refuse(
            run,
            base,
            "bundle_accepts_broken_kernels",
            "the bundle accepts a deliberately broken kernel (every top-level function raises): "
            "build and verify passed every case; verify must run the kernel and compare it "
            f"with a reference ({run.bundle.harness})",
            BROKEN_ID,
        )
    run.say(
        f"[gitkb] bundle validated: baseline builds, protected cases pass, cv <= {budget.max_cv}, "
        f"a broken candidate is rejected by {run.validation['broken_candidate_rejected_by']}"
    )
    return base
