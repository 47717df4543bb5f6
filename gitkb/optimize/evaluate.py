"""One evaluation of one source: the frozen bundle checked, the harness run, the result scored.

Every evaluation runs the frozen copy's harness on a copy of the source
(``experiments/<id>/kernel.py``), with the bundle's hashes and the user's kernel
file checked before and after (a change raises ``BundleChanged`` or
``KernelTouched`` and stops the run); its files land in ``experiments/<id>/``
(``kernel.py``, ``request.json``, ``response.json``, ``harness.log``,
``profile.json``, ``profile_artifacts/<case>/``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitkb.optimize import profilers, scoring, worker
from gitkb.optimize.setup import RunSetup
from gitkb.optimize.trace_writer import dumps

# TLX's portable tool names; ``native_profiler`` is sent as the backend's own tool (ncu on
# nvidia) where the backend has one, as the TLX agent resolves it.
DEFAULT_TOOLS = ("proton_launch", "native_profiler")
DIAGNOSTIC_TOOLS = ("proton_intra_kernel",)
# A harness run's error names why it gave no response; this is the line when it names none.
NO_RESPONSE = "the harness gave no response"


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


def tools(setup: RunSetup, requested: tuple[str, ...] = DEFAULT_TOOLS) -> list[str]:
    native = setup.profiler.get("tool", "none")
    named = [native if t == "native_profiler" and native != "none" else t for t in requested]
    return list(dict.fromkeys(named))


def profile_request(
    setup: RunSetup, exp_id: str, level: str, reason: str, diagnostic: bool = False
) -> dict | None:
    """The structured request a harness's ``profile`` gets (None: profiling is off): TLX's
    fields, ``artifacts_dir`` made per case by the harness process; gitkb adds the backend's
    profiler mapping under ``native_profiler``. ``diagnostic``: TLX's per-warp Proton trace
    request (``--diagnostic-proton-intra-kernel``), never a measurement."""
    if not setup.config.profile:
        return None
    folder = setup.output / "experiments" / exp_id
    artifacts = "diagnostic_profile_artifacts" if diagnostic else "profile_artifacts"
    return {
        "level": "deep" if diagnostic else level,
        "tools": list(DIAGNOSTIC_TOOLS) if diagnostic else tools(setup),
        "experiment_id": exp_id,
        "artifacts_dir": str(folder / artifacts),
        "reason": reason,
        "diagnostic_only": diagnostic,
        "granularity": "warp" if diagnostic else None,
        "native_profiler": setup.profiler,
    }


def evaluate(
    setup: RunSetup, source: str, exp_id: str, level: str, reason: str, request: dict | None = None
) -> worker.Evaluation:
    """Run the frozen harness once on ``source``."""
    folder = setup.output / "experiments" / exp_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.py").write_text(source, encoding="utf-8")
    setup.frozen.verify(f"before {exp_id}")
    setup.kernel_guard.verify(f"before {exp_id}")
    evaluation = worker.run_harness(
        setup.bundle.harness,
        source,
        setup.bundle.target,
        [dict(c.raw) for c in setup.bundle.cases],
        setup.budget.benchmark_repetitions,
        folder,
        setup.budget.max_candidate_seconds,
        setup.environment,
        request or profile_request(setup, exp_id, level, reason),
    )
    setup.frozen.verify(f"during {exp_id}")
    setup.kernel_guard.verify(f"during {exp_id}")
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
    setup: RunSetup,
    source: str,
    exp_id: str,
    level: str,
    reason: str,
    baseline: scoring.Score | None,
) -> Measurement:
    """Evaluate and score against ``baseline`` (None: this is the baseline)."""
    evaluation = evaluate(setup, source, exp_id, level, reason)
    response = evaluation.response
    if evaluation.error is not None or response is None:
        return Measurement(None, [evaluation.error or NO_RESPONSE], level=level)
    if not response["build"]["success"]:
        why = "; ".join(response["build"]["diagnostics"]) or "no diagnostics"
        return Measurement(None, [f"build failed: {why}"], level=level)
    score = scoring.score(response, setup.bundle.cases, baseline)
    diagnostics = [f"{c.case_id}: {d}" for c in score.cases for d in c.diagnostics if not c.passed]
    metrics = {c["case_id"]: c.get("metrics") for c in response["cases"]}
    profiles = {c["case_id"]: c.get("profile") for c in response["cases"] if "profile" in c}
    return Measurement(score, diagnostics, metrics, profiles, level)


def diagnose(setup: RunSetup, source: str, exp_id: str, reason: str) -> dict[str, dict]:
    """TLX's ``--diagnostic-proton-intra-kernel``: one more evaluation of ``source`` with the
    per-warp trace request (its artifacts under ``experiments/<exp_id>/``, its files under
    ``experiments/<exp_id>-diagnostic/``); each case's profile, or the error, by case id.
    Diagnostic only: its timings are never scored."""
    request = profile_request(setup, exp_id, "deep", reason, diagnostic=True)
    if request is None:
        return {}
    evaluation = evaluate(setup, source, f"{exp_id}-diagnostic", "deep", reason, request)
    error, response = evaluation.error, evaluation.response
    if error is None and response is not None and not response["build"]["success"]:
        error = "build failed: " + "; ".join(response["build"]["diagnostics"])
    if error is not None or response is None:
        return {c.case_id: {"error": error or NO_RESPONSE} for c in setup.bundle.cases}
    return {c["case_id"]: c["profile"] for c in response["cases"] if "profile" in c}


def merge_diagnostics(measurement: Measurement, diagnostics: dict[str, dict]) -> None:
    """Each case's diagnostic profile under ``diagnostic_proton_intra_kernel`` (TLX's key)."""
    if measurement.score is None:
        return  # nothing was measured: no case to add a profile to
    for case in measurement.score.cases:
        if case.case_id in diagnostics:
            case.profile = dict(
                case.profile, diagnostic_proton_intra_kernel=diagnostics[case.case_id]
            )
            measurement.profiles[case.case_id] = case.profile
