"""The run's outputs: ``best_kernel.py``, ``experiments.json``, the profiles and ``result.json``.

``result.json`` (also printed on stdout) has the TLX agent's keys and shapes
(``success, stopping_reason, best_kernel, artifacts_dir, baseline, final,
experiments, auto_commit``; a case is ``{case_id, verification, timing,
profile}``), then gitkb's: the winner's id, why nothing was committed, the
device and the cases, the effective budget and where each value came from, the
frozen bundle's hashes, the bundle validation, the revalidation and the trace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitkb.optimize.setup import RunSetup
from gitkb.optimize.trace_writer import dumps
from gitkb.record.values import finite_number

if TYPE_CHECKING:
    from gitkb.optimize.evaluate import Measurement
    from gitkb.optimize.state import BestSoFar, RunState

# gitkb's fields of an experiment, after the TLX agent's.
GITKB_EXPERIMENT_FIELDS = (
    "version",
    "category",
    "commit_title",
    "commit_summary",
    "numbers",
    "kb_cited",
    "kb_excluded_by",
    "kb_feedback",
    "profile_level",
)


def performance(cases: list[dict], aggregate: float | None) -> dict:
    """The TLX agent's performance summary: the aggregate speedup and each case."""
    return {"aggregate_speedup": finite_number(aggregate), "cases": cases}


def experiment_json(out: Path, experiment: dict) -> dict:
    """One experiment as the TLX agent writes it (``result.experiments``,
    ``experiments.json``, ``experiments/<id>/result.json``), gitkb's fields after."""
    folder = out / "experiments" / experiment["id"]
    measured = bool(experiment.get("cases"))
    document = {
        "experiment_id": experiment["id"],
        "round_index": experiment["round"],
        "parent_id": experiment["parent"],
        "status": experiment["status"],
        "source_path": str(folder / "kernel.py"),
        "performance": performance(experiment["cases"], experiment.get("aggregate_speedup"))
        if measured
        else None,
        "diagnostics": "; ".join(experiment.get("diagnostics") or []),
        "mutation_summary": experiment.get("change") or "",
        "hypothesis": experiment.get("hypothesis") or "",
        "evidence": experiment.get("evidence") or "",
        "expected_effect": experiment.get("expected_effect") or "",
        "risk": experiment.get("risk") or "",
        "profile_path": str(folder / "profile.json") if measured else None,
    }
    document.update({k: experiment.get(k) for k in GITKB_EXPERIMENT_FIELDS})
    return document


@dataclass
class Ending:
    """How a run ended: what ``result.json`` reports beyond the run's own state."""

    stopping: str
    winner: BestSoFar | None = None  # the best that passed revalidation
    final: Measurement | None = None  # its revalidation
    commit: dict | None = None
    revalidation: dict | None = None
    error: str | None = None  # why the run stopped early (exit 1)


def write(setup: RunSetup, state: RunState, ending: Ending, base: Measurement | None) -> dict:
    """Write every output file (``base``: the baseline as measured, None when the run
    stopped before); returns the result document: the TLX agent's keys, then gitkb's."""
    out = setup.output
    winner = ending.winner
    final_score = ending.final.score if winner and ending.final else None
    base_score = base.score if base is not None else None
    best_source = winner.source if winner else setup.baseline_source
    (out / "best_kernel.py").write_text(best_source, encoding="utf-8")
    experiments = [experiment_json(out, e) for e in state.experiments]
    (out / "experiments.json").write_bytes(dumps(experiments))
    base_profiles = base.profiles if base is not None else {}
    (out / "baseline_profile.json").write_bytes(dumps(base_profiles))
    final_profiles = ending.final.profiles if winner and ending.final else base_profiles
    (out / "best_profile.json").write_bytes(dumps(final_profiles))
    final_folder = out / "experiments" / "final"
    if not (final_folder / "profile.json").exists():  # no finalist: TLX's final is the baseline
        final_folder.mkdir(parents=True, exist_ok=True)
        (final_folder / "profile.json").write_bytes(dumps(final_profiles))
    baseline = performance([c.as_json() for c in base_score.cases] if base_score else [], 1.0)
    final = baseline
    if final_score is not None:
        final = performance([c.as_json() for c in final_score.cases], final_score.aggregate)
    target = setup.bundle.target
    document = {
        "success": winner is not None,
        "stopping_reason": ending.stopping,
        "best_kernel": best_source,
        "artifacts_dir": str(out),
        "baseline": baseline,
        "final": final,
        "experiments": experiments,
        "auto_commit": ending.commit,
        "winner": winner.id if winner else None,
        "commit_skipped": None if ending.commit is not None else _no_commit_reason(setup, ending),
        "provider": setup.config.provider,
        "device": {
            "backend": target.get("backend"),
            "architecture": target.get("architecture"),
            "device": target.get("device"),
            "native_profiler": setup.profiler.get("tool", "none"),
        },
        "cases": [dict(c.raw) for c in setup.bundle.cases],
        "bundle": {
            "source": setup.frozen.origin,
            "frozen": str(setup.frozen.path),
            "sha256": dict(setup.frozen.files),
        },
        "kernel": str(setup.kernel),
        "budget": dict(vars(setup.budget)),
        "budget_sources": dict(setup.budget_sources),
        "validation": state.validation,
        "revalidation": ending.revalidation,
        "trace": {
            "path": str(out / "trace"),
            "label": setup.trace_label if setup.trace.head else None,
            "head": setup.trace.head,
        },
        "seconds": round(setup.elapsed(), 3),
    }
    if ending.error:
        document["error"] = ending.error
    save(out, document)
    return document


def _no_commit_reason(setup: RunSetup, ending: Ending) -> str:
    if ending.error:
        return ending.error
    if setup.commit_skipped:
        return setup.commit_skipped
    if not setup.config.commit_winner:
        return "--no-commit-winner"
    return "no winner"


def save(out: Path, document: dict) -> None:
    (out / "result.json").write_bytes(dumps(document))


def result_json(document: dict) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False)
