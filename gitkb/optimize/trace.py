"""The run's trace: a git repository in the format mining reads (specs/TRACE_FORMAT.md).

v0 is the baseline (``kernel.py``, ``solution.json``, ``definition.json``,
``memory/v0.json`` in one commit). Every evaluated experiment is the next
version: a promotion changes ``kernel.py`` and adds ``memory/v<N>.json`` under
the subject ``v<N>: <title> (+X.X%)``; a rejection or failure adds only its
memory file under ``v<N>: reverted (<reason>) - dead-end recorded: <change>``,
with the verdict in ``quality_gate``. A finalist that fails revalidation gets a
commit restoring the baseline and rewriting its memory file as a failure. File
contents are a deterministic function of the run's measurements.
"""

from __future__ import annotations

import json
from pathlib import Path

from gitkb.optimize.scoring import Score

BRANCH = "refs/heads/main"


def dumps(document) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def performance(score: Score, baseline: Score, incumbent_aggregate: float | None) -> dict:
    """The ``performance`` block of one measured version (numbers of its passing cases)."""
    from gitkb.optimize.scoring import weighted_geomean

    measured = [c for c in score.cases if c.passed]
    medians = [c.median_us for c in measured]
    geomean = weighted_geomean(medians, [1.0] * len(medians)) if medians else None
    block = {
        "latency_us": geomean,
        "latency_us_geomean": geomean,
        "latency_us_arith_mean": sum(medians) / len(medians) if medians else None,
        "latency_us_by_shape": {c.case_id: c.median_us for c in measured},
        "speedup_vs_ref_geomean": score.aggregate,
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
) -> dict:
    """``memory/v<N>.json`` for one experiment (or the baseline, version 0)."""
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
        "performance": performance(score, baseline or score, incumbent_aggregate)
        if measured
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

    def _commit(self, edits: dict[str, bytes], message: str) -> str:
        sha = self.repo.write_commit(self.head, edits, message)
        self.repo.update_ref(BRANCH, self.head, sha, reason="gitkb optimize")
        self.repo.sync_work_tree(BRANCH, sha, sorted(edits))
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
    ) -> str:
        from gitkb.vcs.trailers import format_message

        # trace_label: what the run calls this trace (its KB-Trace trailer); mining files
        # the trace under it, so the label is one name everywhere.
        solution = {
            "name": operator,
            "spec": {"target_hardware": hardware, "languages": ["python"]},
            "trace_label": label,
        }
        definition = {"name": operator, "description": description, "axes": {}}
        return self._commit(
            {
                "kernel.py": source.encode(),
                "solution.json": dumps(solution),
                "definition.json": dumps(definition),
                "memory/v0.json": dumps(memory),
            },
            format_message("v0: baseline kernel", "The kernel as the run found it, measured."),
        )

    def promoted(self, version: int, source: str, memory: dict, title: str, pct: float) -> str:
        from gitkb.vcs.trailers import format_message

        subject = f"v{version}: {_clip(title, 60)} ({pct:+.1f}%)"
        return self._commit(
            {"kernel.py": source.encode(), f"memory/v{version}.json": dumps(memory)},
            format_message(
                subject, f"Verdict: promoted\n\n{memory['optimization']['action_description']}"
            ),
        )

    def rejected(self, version: int, memory: dict, reason: str, change: str) -> str:
        from gitkb.vcs.trailers import format_message

        subject = f"v{version}: reverted ({_clip(reason, 60)})"
        body = f"Verdict: reverted\n\ndead-end recorded: {_clip(change or 'candidate', 200)}"
        return self._commit(
            {f"memory/v{version}.json": dumps(memory)}, format_message(subject, body)
        )

    def revalidation_failed(self, version: int, baseline_source: str, memory: dict) -> str:
        from gitkb.vcs.trailers import format_message

        subject = f"v{version}: reverted (finalist revalidation failed)"
        body = (
            "Verdict: reverted\n\n"
            "The finalist failed its revalidation; kernel.py is the baseline again."
        )
        return self._commit(
            {"kernel.py": baseline_source.encode(), f"memory/v{version}.json": dumps(memory)},
            format_message(subject, body),
        )
