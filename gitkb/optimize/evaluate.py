"""One evaluation of one source: the frozen bundle checked, the harness run, the result scored.

Every evaluation runs the frozen copy's harness, with the hashes checked before
and after (a change raises ``BundleChanged`` and stops the run); its files land
in ``experiments/<id>/`` (``kernel.py``, ``request.json``, ``response.json``,
``harness.log``, ``profile.json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitkb.optimize import profilers, scoring, worker
from gitkb.optimize.setup import Run
from gitkb.optimize.trace import dumps

DEFAULT_TOOLS = ["proton_launch", "native_profiler"]


@dataclass
class Measurement:
    """An evaluation scored against the baseline; ``score`` None when nothing was measured."""

    score: scoring.Score | None
    diagnostics: list[str] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    profiles: dict = field(default_factory=dict)
    level: str = "summary"

    @property
    def measured(self) -> bool:
        return self.score is not None


def profile_request(run: Run, exp_id: str, level: str, reason: str) -> dict | None:
    """The structured request a harness's ``profile`` gets (None: profiling is off)."""
    if not run.config.profile:
        return None
    folder = run.output / "experiments" / exp_id
    return {
        "level": level,
        "tools": list(DEFAULT_TOOLS),
        "experiment_id": exp_id,
        "artifacts_dir": str((folder / "profile_artifacts").resolve()),
        "reason": reason,
        "diagnostic_only": False,
        "native_profiler": run.profiler,
    }


def evaluate(run: Run, source: str, exp_id: str, level: str, reason: str) -> worker.Evaluation:
    """Run the frozen harness once on ``source``."""
    folder = run.output / "experiments" / exp_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.py").write_text(source, encoding="utf-8")
    run.frozen.verify(f"before {exp_id}")
    evaluation = worker.run_harness(
        run.bundle.harness,
        source,
        run.bundle.target,
        [dict(c.raw) for c in run.bundle.cases],
        run.budget.benchmark_repetitions,
        folder,
        run.budget.max_candidate_seconds,
        run.environment,
        profile_request(run, exp_id, level, reason),
    )
    run.frozen.verify(f"during {exp_id}")
    if evaluation.response is not None:
        for case in evaluation.response["cases"]:
            if "profile" in case:
                case["profile"] = profilers.normalize(case["profile"])
    profiles = {
        c["case_id"]: c["profile"]
        for c in (evaluation.response or {}).get("cases", [])
        if "profile" in c
    }
    (folder / "profile.json").write_bytes(dumps(profiles))
    return evaluation


def measure(
    run: Run, source: str, exp_id: str, level: str, reason: str, baseline: scoring.Score | None
) -> Measurement:
    """Evaluate and score against ``baseline`` (None: this is the baseline)."""
    evaluation = evaluate(run, source, exp_id, level, reason)
    if evaluation.error:
        return Measurement(None, [evaluation.error], level=level)
    response = evaluation.response
    if not response["build"]["success"]:
        why = "; ".join(response["build"]["diagnostics"]) or "no diagnostics"
        return Measurement(None, [f"build failed: {why}"], level=level)
    score = scoring.score(response, run.bundle.cases, baseline)
    diagnostics = [f"{c.case_id}: {d}" for c in score.cases for d in c.diagnostics if not c.passed]
    metrics = {c["case_id"]: c.get("metrics") for c in response["cases"]}
    profiles = {c["case_id"]: c.get("profile") for c in response["cases"] if "profile" in c}
    return Measurement(score, diagnostics, metrics, profiles, level)
