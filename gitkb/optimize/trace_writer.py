"""The run's trace: a git repository in the format mining reads (docs/trace-format.md).

v0 is the baseline (``kernel.py``, ``solution.json``, ``definition.json``,
``memory/v0.json`` in one commit): the code the run's own work starts from, the kernel
as the run found it or, after a warm start, the knowledge base's code it adopted (the
adoption is that record's attestation and confirmation, not a step of this run: mining
files only what the run changed on top of it, with gains and ``speedup_vs_ref_geomean``
measured against it; ``speedup_vs_original_baseline`` against the kernel as found).
Every evaluated experiment of the rounds is the next version: a promotion changes
``kernel.py`` and adds ``memory/v<N>.json`` under the subject ``v<N>: <title>
(+X.X%)``; a rejection or failure adds only its memory file under ``v<N>:
reverted (<reason>)`` with the lesson in the body (``dead-end recorded: <change> <what
happened, on which case, and why>``, see ``lesson``) and the verdict in
``quality_gate``. A finalist that fails revalidation gets a commit restoring the
baseline and rewriting its memory file as a failure. File contents are a deterministic
function of the run's measurements.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gitkb.optimize.scoring import Score, weighted_geomean
from gitkb.vcs.trailers import format_message

BRANCH = "refs/heads/main"


def dumps(document: object) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# What a harness says before its own words: gitkb's prefixes, not the reason.
_REPORTED = re.compile(r"^(?:verify raised |verify returned |build raised |build failed: )+")


def _one_clause(text: str, limit: int = 200) -> str:
    """``text`` as one clause of a dead-end line: its first line, with the commas that would
    split it into several dead-ends turned into semicolons (mining splits on top-level
    commas) and no sentence end inside."""
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    first = _clip(first, limit).rstrip(".")
    out, depth = [], 0
    for ch in first:
        depth += ch in "([{"
        depth -= ch in ")]}" and depth > 0
        out.append(";" if ch == "," and depth == 0 else ch)
    return re.sub(r"\.\s+(?=[A-Za-z])", "; ", "".join(out))


def _case_condition(parameters: dict) -> str:
    """A case's parameters as a condition a reader can check: ``(rows=1024, cols=512)``."""
    shown = [
        f"{k}={v}"
        for k, v in parameters.items()
        if isinstance(v, str | int | float | bool) and len(str(v)) <= 40
    ]
    return f" ({', '.join(shown[:8])})" if shown else ""


def lesson(experiment: dict, score: Score | None, parameters: dict[str, dict]) -> str:
    """The dead-end line of a rejected or failed experiment: the change, the case it failed
    verification on with that case's parameters, and the harness's own reason (``because
    the harness reported ...``) when there is one; else what was measured. Only what the
    run saw is written."""
    change = _one_clause(experiment.get("change") or experiment["id"], 160)
    diagnostics = experiment.get("diagnostics") or []
    if score is None:
        reported = [d for d in diagnostics if d.startswith(("build failed", "harness"))]
        if reported:
            why = _one_clause(_REPORTED.sub("", reported[0]))
            return f"{change} does not build and run because the harness reported {why}"
        return f"{change} was not evaluated: {_one_clause(diagnostics[0] if diagnostics else '-')}"
    failed = [c for c in score.cases if not c.passed]
    failed.sort(key=lambda c: not c.protected)
    if failed:
        case = failed[0]
        kind = "protected case" if case.protected else "case"
        where = f"{kind} {case.case_id}{_case_condition(parameters.get(case.case_id, {}))}"
        said = [d for d in case.diagnostics if d.strip()]
        text = f"{change} is incorrect on {where}"
        if said:
            text += f" because the harness reported {_one_clause(_REPORTED.sub('', said[0]))}"
        passed = [c for c in score.cases if c.passed and c.speedup is not None]
        if passed:
            text += " while " + " and ".join(
                f"{c.case_id} passed at {c.speedup:.3f}x" for c in passed[:3]
            )
        return text
    measured = " and ".join(
        f"{c.case_id}{_case_condition(parameters.get(c.case_id, {}))} at {c.speedup:.3f}x"
        for c in score.cases
        if c.speedup is not None
    )
    decision = _one_clause((diagnostics or ["rejected"])[0])
    return f"{change} measured {measured} and was rejected: {decision}"


def performance(
    score: Score, baseline: Score, incumbent_aggregate: float | None, reference: float = 1.0
) -> dict:
    """The ``performance`` block of one measured version (numbers of its passing cases);
    ``reference``: the aggregate of the trace's v0 (1.0 unless it is adopted code)."""
    measured = [c for c in score.cases if c.passed]
    medians = [c.median_us for c in measured if c.median_us is not None]
    geomean = weighted_geomean(medians, [1.0] * len(medians)) if medians else None
    block = {
        "latency_us": geomean,
        "latency_us_geomean": geomean,
        "latency_us_arith_mean": sum(medians) / len(medians) if medians else None,
        "latency_us_by_shape": {c.case_id: c.median_us for c in measured},
        "speedup_vs_ref_geomean": None if score.aggregate is None else score.aggregate / reference,
        # against the kernel as the run found it, also after a warm start adopted code: the
        # number a later run ranks this code by (only like-for-like: the same cases)
        "speedup_vs_original_baseline": score.aggregate,
        "measurement_scope": "real_evaluator_shapes",
        "shape_ids_are_opaque": False,
        "measurement_status": "complete" if len(measured) == len(score.cases) else "incomplete",
        "measured_shape_count": len(measured),
        "expected_shape_count": len(score.cases),
        "shape_measurement_repeats": 1,
        "measurement_subject": "candidate",
        "measurement_source": "authoritative_verification",
        "comparison_method": "single_candidate_vs_canonical_incumbent",
        "carried_from_version": None,
    }
    if incumbent_aggregate and score.aggregate:
        block["authoritative_improvement_pct"] = round(
            (score.aggregate / incumbent_aggregate - 1) * 100, 4
        )
    return block


def memory_record(
    version: int,
    experiment: dict,
    score: Score | None,
    baseline: Score | None,
    incumbent_aggregate: float | None,
    profiler: dict,
    reference: float = 1.0,
) -> dict:
    """``memory/v<N>.json`` for one experiment (or the baseline, version 0); ``reference``:
    the aggregate of the trace's v0."""
    promoted = experiment["status"] in ("promoted", "baseline")
    measured = score is not None and any(c.passed for c in score.cases)
    correctness = "UNKNOWN"
    if score is not None and score.cases:
        correctness = "PASS" if score.protected_pass else "FAIL"
    failure = None if promoted else "; ".join(experiment.get("diagnostics") or [])[:2000]
    errors = [
        (c.get("max_abs_err"), c.get("max_rel_err"))
        for c in experiment.get("metrics", {}).values()
        if isinstance(c, dict)
    ]
    abs_errs = [e[0] for e in errors if isinstance(e[0], int | float)]
    rel_errs = [e[1] for e in errors if isinstance(e[1], int | float)]
    record = {
        "version": f"v{version}",
        "performance": performance(score, baseline or score, incumbent_aggregate, reference)
        if measured and score is not None
        else {
            "measurement_status": "not_evaluated_or_incomplete",
            "measurement_subject": "unavailable",
        },
        "correctness": {
            "status": correctness,
            "max_abs_err": max(abs_errs) if abs_errs else None,
            "max_rel_err": max(rel_errs) if rel_errs else None,
        },
        "quality_gate": {
            "result": "PASS" if promoted else "FAIL",
            "failure_reason": failure or None,
        },
        "optimization": {
            "action_category": experiment.get("category", "baseline"),
            "action_description": experiment.get("change") or "",
            "expected_impact": experiment.get("expected_effect") or "",
            "risks_and_rollback": experiment.get("risk") or "",
        },
        "profile_evidence": {
            "tool_used": profiler.get("tool", "none"),
            "evidence_summary": profiler.get("summary", ""),
            "bottleneck_type": profiler.get("bottleneck_type", "not_profiled"),
        },
        "experience": {
            "experiment_count": 1,
            "recorded_experiment_count": 1,
            "experiments": [
                {
                    "index": 1,
                    "name": experiment["id"],
                    "hypothesis": experiment.get("hypothesis") or "",
                    "change": experiment.get("change") or "",
                    "evidence": experiment.get("evidence") or "",
                    "result": experiment.get("numbers") or "",
                    "decision": experiment["status"],
                }
            ],
        },
        "open_directions": [],
        "pitfalls_and_fixes": []
        if promoted
        else [
            {
                "pitfall": experiment.get("change") or experiment["id"],
                "explanation": failure or experiment["status"],
                "fix": "reverted to the incumbent",
            }
        ],
        "git_commit_hash": None,
    }
    return record


class TraceWriter:
    """Appends the run's versions to ``OUTPUT/trace`` as commits on ``main``."""

    def __init__(self, path: Path) -> None:
        from gitkb.vcs.repository import Repository

        self.path = Path(path)
        self.repo = Repository.init(self.path)
        self.head: str | None = None
        self.start: str | None = None  # the v0 commit
        self.start_source: str | None = None  # v0's kernel.py
        self.reference = 1.0  # the aggregate of v0's code against the kernel as found

    def _commit(self, edits: dict[str, bytes], message: str) -> str:
        from gitkb.vcs.worktree import sync_work_tree

        sha = self.repo.write_commit(self.head, edits, message)
        self.repo.update_ref(BRANCH, self.head, sha, reason="gitkb optimize")
        sync_work_tree(self.repo, BRANCH, sha, sorted(edits))
        self.head = sha
        return sha

    def baseline(
        self,
        source: str,
        memory: dict,
        operator: str,
        description: str,
        hardware: list[str],
        label: str,
        adopted: str | None = None,
        reference: float = 1.0,
    ) -> str:
        """v0. ``adopted``: the store record whose code a warm start adopted (``source``),
        ``reference`` its aggregate against the kernel as the run found it."""

        # trace_label: what the run calls this trace (its KB-Trace trailer); mining files
        # the trace under it, so the label is one name everywhere.
        solution = {
            "name": operator,
            "spec": {"target_hardware": hardware, "languages": ["python"]},
            "trace_label": label,
        }
        definition = {"name": operator, "description": description, "axes": {}}
        subject, body = "v0: baseline kernel", "The kernel as the run found it, measured."
        if adopted:
            subject = "v0: baseline kernel (adopted from the knowledge base)"
            body = (
                f"The knowledge base's record {adopted}, adopted by the warm start after it "
                f"measured {reference:.4g}x over the kernel as the run found it. The run's own "
                "work starts here; the adoption is that record's attestation and confirmation."
            )
        self.reference, self.start_source = reference, source
        self.start = self._commit(
            {
                "kernel.py": source.encode(),
                "solution.json": dumps(solution),
                "definition.json": dumps(definition),
                "memory/v0.json": dumps(memory),
            },
            format_message(subject, body),
        )
        return self.start

    def promoted(self, version: int, source: str, memory: dict, title: str, pct: float) -> str:
        subject = f"v{version}: {_clip(title, 60)} ({pct:+.1f}%)"
        return self._commit(
            {"kernel.py": source.encode(), f"memory/v{version}.json": dumps(memory)},
            format_message(
                subject, f"Verdict: promoted\n\n{memory['optimization']['action_description']}"
            ),
        )

    def rejected(self, version: int, memory: dict, reason: str, dead_end: str) -> str:
        subject = f"v{version}: reverted ({_clip(reason, 60)})"
        body = f"Verdict: reverted\n\ndead-end recorded: {_clip(dead_end, 600)}"
        return self._commit(
            {f"memory/v{version}.json": dumps(memory)}, format_message(subject, body)
        )

    def revalidation_failed(self, version: int, baseline_source: str, memory: dict) -> str:
        subject = f"v{version}: reverted (finalist revalidation failed)"
        body = (
            "Verdict: reverted\n\n"
            "The finalist failed its revalidation; kernel.py is the baseline again."
        )
        return self._commit(
            {"kernel.py": baseline_source.encode(), f"memory/v{version}.json": dumps(memory)},
            format_message(subject, body),
        )
