"""The run's outputs: ``best_kernel.py``, ``experiments.json``, the profiles and ``result.json``.

``result.json`` (also printed on stdout) names the device and the cases, the
effective budget and where each value came from, the frozen bundle's hashes,
the absolute output folder, every experiment with its decision, the stopping
reason, the winner and the commit.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from gitkb.optimize.setup import Run
from gitkb.optimize.trace import dumps

EXPERIMENT_FIELDS = (
    "id",
    "round",
    "parent",
    "status",
    "version",
    "hypothesis",
    "evidence",
    "change",
    "expected_effect",
    "risk",
    "diagnostics",
    "numbers",
    "kb_cited",
    "kb_excluded_by",
    "kb_feedback",
    "aggregate_speedup",
    "profile_level",
)


@dataclass
class Ending:
    """How a run ended: what ``result.json`` reports beyond the run's own state."""

    stopping: str
    winner: dict | None = None  # the best entry that passed revalidation
    final: object | None = None  # its revalidation Measurement
    commit: dict | None = None
    revalidation: dict | None = None
    error: str | None = None  # why the run stopped early (exit 1)


def _finite(value):
    return value if value is None or math.isfinite(value) else None


def write(run: Run, ending: Ending, base) -> dict:
    """Write every output file; returns the result document."""
    out = run.output
    winner = ending.winner
    final_score = ending.final.score if winner and ending.final else None
    base_score = base.score if base is not None else None
    (out / "best_kernel.py").write_text(
        winner["source"] if winner else run.baseline_source, encoding="utf-8"
    )
    (out / "experiments.json").write_bytes(dumps(run.experiments))
    base_profiles = base.profiles if base is not None else {}
    (out / "baseline_profile.json").write_bytes(dumps(base_profiles))
    final_profiles = ending.final.profiles if winner and ending.final else base_profiles
    (out / "best_profile.json").write_bytes(dumps(final_profiles))
    target = run.bundle.target
    document = {
        "success": winner is not None and (ending.commit is None or ending.commit["success"]),
        "stopping_reason": ending.stopping,
        "winner": winner["id"] if winner else None,
        "aggregate_speedup": _finite(final_score.aggregate) if final_score else 1.0,
        "provider": run.config.provider,
        "device": {
            "backend": target.get("backend"),
            "architecture": target.get("architecture"),
            "device": target.get("device"),
            "native_profiler": run.profiler.get("tool", "none"),
        },
        "cases": [dict(c.raw) for c in run.bundle.cases],
        "bundle": {
            "source": run.frozen.origin,
            "frozen": str(run.frozen.path.resolve()),
            "sha256": dict(run.frozen.files),
        },
        "kernel": str(run.kernel),
        "output": str(out.resolve()),
        "budget": dict(vars(run.budget)),
        "budget_sources": dict(run.budget_sources),
        "validation": run.validation,
        "baseline": {"cases": [c.as_json() for c in base_score.cases] if base_score else []},
        "final": {"cases": [c.as_json() for c in final_score.cases] if final_score else []},
        "revalidation": ending.revalidation,
        "experiments": [{k: e.get(k) for k in EXPERIMENT_FIELDS} for e in run.experiments],
        "commit": ending.commit
        if ending.commit is not None
        else {"attempted": False, "reason": _no_commit_reason(run, ending)},
        "trace": {
            "path": str((out / "trace").resolve()),
            "label": run.trace_label if run.trace.head else None,
            "head": run.trace.head,
        },
        "seconds": round(run.elapsed(), 3),
    }
    if ending.error:
        document["error"] = ending.error
    save(out, document)
    return document


def _no_commit_reason(run: Run, ending: Ending) -> str:
    if ending.error:
        return ending.error
    if run.commit_skipped:
        return run.commit_skipped
    if not run.config.commit_winner:
        return "--no-commit-winner"
    return "no winner"


def save(out: Path, document: dict) -> None:
    (out / "result.json").write_bytes(dumps(document))


def result_json(document: dict) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False)
