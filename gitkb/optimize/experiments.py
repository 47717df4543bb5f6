"""Recording experiments: ``experiments/<id>/result.json``, the trace, and the reviewer's log.

Per candidate the log (stderr) says, before it runs: hypothesis, evidence,
change, expected effect, risk; after: the status line (correctness, median,
p95, CV and speedup per case), the profile evidence when there is any, and the
decision with its reasons. Kernel source never goes to the log.
"""

from __future__ import annotations

from gitkb.optimize import outputs, profilers
from gitkb.optimize.evaluate import Measurement
from gitkb.optimize.providers import Candidate
from gitkb.optimize.scoring import Score
from gitkb.optimize.setup import RunSetup
from gitkb.optimize.trace_writer import dumps, lesson

REVIEW_FIELDS = (
    ("hypothesis", "hypothesis"),
    ("evidence", "evidence"),
    ("change", "change"),
    ("expected effect", "expected_effect"),
    ("risk", "risk"),
)


def fmt(value: object, digits: int = 3) -> str:
    return "nan" if value is None else f"{value:.{digits}f}"


def _ncu_part(profile: dict | None) -> str:
    parsed = (profile.get("parsed") or {}).get("ncu") if isinstance(profile, dict) else None
    duration = parsed.get("duration_us") if isinstance(parsed, dict) else None
    return "ncu=unavailable" if duration is None else f"ncu.duration_us={duration:.3f}"


def progress_line(experiment: dict) -> str:
    """The TLX agent's progress line: ``[tlx-agent] <id> status=...``, the aggregate and each
    case (correctness, median, p95, CV, speedup), then the decision; what log scrapers of
    the TLX agent read."""
    parts = [f"[tlx-agent] {experiment['id']} status={experiment['status']}"]
    if experiment.get("cases"):
        parts.append(f"aggregate_speedup={fmt(experiment.get('aggregate_speedup'), 4)}x")
    for case in experiment.get("cases", []):
        fields = [case["case_id"], "correct" if case["verification"]["passed"] else "incorrect"]
        if case["timing"] is not None:
            fields += [
                f"median={fmt(case['median_us'])}us",
                f"p95={fmt(case['p95_us'])}us",
                f"cv={fmt(case['cv'], 4)}",
            ]
        if case["speedup"] is not None and experiment["status"] != "baseline":
            fields.append(f"speedup={fmt(case['speedup'], 4)}x")
        fields.append(_ncu_part(case["profile"]))
        parts.append("case=" + ",".join(fields))
    if experiment["status"] != "baseline" and experiment.get("diagnostics"):
        parts.append(f"diagnostics=decision={'; '.join(experiment['diagnostics'])[:400]}")
    return " ".join(parts)


def stage_line(exp_id: str, stage: str) -> str:
    """TLX's ``generating`` / ``evaluating`` lines around a proposal."""
    return f"[tlx-agent] {exp_id} status={stage}"


def announce(setup: RunSetup, exp_id: str, candidate: Candidate) -> None:
    """The reviewer's lines about a proposal, before it is judged (TLX's one-line summary,
    then gitkb's field by field)."""
    summary = [
        f"{label}={' '.join(str(getattr(candidate, name)).split())[:240]!r}"
        for label, name in (
            ("hypothesis", "hypothesis"),
            ("evidence", "evidence"),
            ("change", "change"),
            ("expected", "expected_effect"),
            ("risk", "risk"),
        )
        if getattr(candidate, name)
    ]
    text = " ".join(summary) or "change='candidate source edited'"
    setup.say(f"[tlx-agent] {exp_id} {text}")
    for label, name in REVIEW_FIELDS:
        text = " ".join(str(getattr(candidate, name) or "-").split())
        setup.say(f"[gitkb] {exp_id} {label}: {text[:400]}")


def numbers(score: Score | None) -> str:
    if score is None:
        return "not measured"
    cases = ", ".join(
        f"{c.case_id} {fmt(c.median_us)} us ({fmt(c.speedup, 3)}x)"
        if c.passed
        else f"{c.case_id} failed"
        for c in score.cases
    )
    return f"aggregate {fmt(score.aggregate, 4)}x; {cases}"


def exclusion(experiment: dict) -> dict:
    """A rejected experiment as the next prompts see it."""
    return {
        "id": experiment["id"],
        "hypothesis": experiment.get("hypothesis", ""),
        "change": experiment.get("change", ""),
        "decision": f"{experiment['status']}: {'; '.join(experiment['diagnostics'])[:300]}",
        "numbers": experiment["numbers"],
    }


def profiler_evidence(setup: RunSetup, profiles: dict) -> dict:
    tool = setup.profiler.get("tool", "none")
    parsed = sorted(
        {t for p in profiles.values() if isinstance(p, dict) for t in p.get("parsed") or {}}
    )
    if tool == "none" and not parsed:
        summary = setup.profiler.get("reason", "no native profiler on this backend")
        return {"tool": "none", "summary": summary, "bottleneck_type": "not_profiled"}
    usable = [k for k, v in profiles.items() if isinstance(v, dict) and "error" not in v]
    tools = ", ".join(parsed) if parsed else tool
    return {
        "tool": parsed[0] if parsed and tool == "none" else tool,
        "summary": f"{tools} profile of {len(usable)} of {len(profiles)} cases",
        "bottleneck_type": "profiled",
    }


def record(
    setup: RunSetup,
    exp_id: str,
    round_no: int,
    parent: str | None,
    status: str,
    candidate: Candidate | None,
    measurement: Measurement | None,
    diagnostics: list[str],
    version: int | None,
) -> dict:
    """Write the experiment's result.json and log it; returns the experiment (the loop keeps
    it in ``RunState.experiments``)."""
    score = measurement.score if measurement else None
    meta = candidate.metadata() if candidate else {}
    provider = (candidate.provider or setup.config.provider) if candidate else None
    experiment = {
        "id": exp_id,
        "round": round_no,
        "parent": parent,
        "status": status,
        "version": version,
        "category": f"{provider}_provider" if candidate else "baseline",
        **meta,
        "kb_cited": list(candidate.cited) if candidate else [],
        "kb_excluded_by": list(candidate.excluded_by) if candidate else [],
        "diagnostics": diagnostics,
        "metrics": measurement.metrics if measurement else {},
        "profile_level": measurement.level if measurement else None,
        "aggregate_speedup": score.aggregate if score else None,
        "cases": [c.as_json() for c in score.cases] if score else [],
        "numbers": numbers(score),
    }
    folder = setup.output / "experiments" / exp_id
    folder.mkdir(parents=True, exist_ok=True)
    if candidate is not None:  # TLX writes the source of every try, "" when there was none
        (folder / "kernel.py").write_text(candidate.source or "", encoding="utf-8")
    (folder / "result.json").write_bytes(dumps(outputs.experiment_json(setup.output, experiment)))
    setup.say(progress_line(experiment))
    for case_id, profile in (measurement.profiles if measurement else {}).items():
        line = profilers.evidence_line(profile)
        if line:
            setup.say(f"[gitkb] {exp_id} profile {case_id}: {line}")
    return experiment


def decide_line(setup: RunSetup, experiment: dict, best_aggregate: float | None) -> None:
    """The decision and its reasons, as the last line about an experiment."""
    if experiment["status"] == "promoted":
        why = (
            f"aggregate {fmt(experiment['aggregate_speedup'], 4)}x >= min_speedup "
            f"{setup.budget.min_speedup}, above the best {fmt(best_aggregate, 4)}x, protected "
            f"cases correct, cv within {setup.budget.max_cv}"
        )
    else:
        why = "; ".join(experiment["diagnostics"])[:400] or experiment["status"]
    setup.say(f"[gitkb] {experiment['id']} decision: {experiment['status']}: {why}")


def trace_rejection(
    setup: RunSetup, experiment: dict, measurement: Measurement, version: int, memory: dict
) -> str:
    """Commit a rejected or failed experiment to the trace, with its lesson as the dead-end:
    the change, the case it failed on with that case's parameters, and the harness's reason,
    so mining can state the anti-strategy's condition and cause."""
    parameters = {c.case_id: c.parameters for c in setup.bundle.cases}
    dead_end = lesson(experiment, measurement.score if measurement else None, parameters)
    memory["pitfalls_and_fixes"][0]["explanation"] = dead_end
    reason = (experiment["diagnostics"] or [experiment["status"]])[0]
    return setup.trace.rejected(version, memory, reason, dead_end)
