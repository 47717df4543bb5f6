"""A tiny, real example trace and the records mined from it: the trace gates' valid sample.

``write_trace`` writes a three-version softmax trace (a legacy baseline, a legacy
milestone with an online rescale, a long-horizon promotion that multiplies by the
reciprocal of the row sum, then a profiler capture of it) with the trace builder.
``mined_records`` returns the records a miner may write for its two milestones,
citing the commits just written. ``sample_store`` puts the trace under
``refs/kb/traces/<label>`` in a new store and admits the first milestone, so the
trace gates rebuild the second one's evidence from the store, exactly as they do
for a real push or admission.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gitkb import record as rec
from gitkb.layout import trace_ref
from gitkb.record import new_track
from gitkb.store import Store
from gitkb.testing.trace_builder import Trace

LABEL = "kernel_opt_001_example_softmax"
AUTHOR = "Example Agent <agent@example.invalid>"
START = 1_767_225_600  # 2026-01-01, so the example's commits never depend on the clock

_HEAD = """import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    row_ptr = in_ptr + row * n_cols
"""
_THREE_PASS = """    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for off in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + off + cols, mask=off + cols < n_cols, other=float("-inf"))
        m = tl.maximum(m, x.to(tl.float32))
    row_max = tl.max(m, 0)
    s = tl.zeros([BLOCK], tl.float32)
    for off in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + off + cols, mask=off + cols < n_cols, other=float("-inf"))
        s += tl.exp(x.to(tl.float32) - row_max)
    row_sum = tl.sum(s, 0)
"""
_ONLINE = """    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for off in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + off + cols, mask=off + cols < n_cols, other=float("-inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.where(x > float("-inf"), tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, 0)
    row_sum = tl.sum(s * tl.exp(m - row_max), 0)
"""
_DIVIDE = """    for off in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + off + cols, mask=off + cols < n_cols, other=float("-inf"))
        y = tl.exp(x.to(tl.float32) - row_max) / row_sum
        tl.store(out_ptr + row * n_cols + off + cols, y, mask=off + cols < n_cols)
"""
_RECIPROCAL = """    inv_sum = 1.0 / row_sum
    for off in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + off + cols, mask=off + cols < n_cols, other=float("-inf"))
        y = tl.exp(x.to(tl.float32) - row_max) * inv_sum
        tl.store(out_ptr + row * n_cols + off + cols, y, mask=off + cols < n_cols)
"""
KERNELS = (_HEAD + _THREE_PASS + _DIVIDE, _HEAD + _ONLINE + _DIVIDE, _HEAD + _ONLINE + _RECIPROCAL)
GEOMEANS = (50.0, 40.0, 32.0)  # us; each step is exactly 20.0% faster than the one before

ONLINE_SNIPPET = "".join(
    f"-{line}\n" for line in _THREE_PASS.splitlines() if line not in _ONLINE.splitlines()
) + "".join(f"+{line}\n" for line in _ONLINE.splitlines() if line not in _THREE_PASS.splitlines())
RECIPROCAL_SNIPPET = (
    "+    inv_sum = 1.0 / row_sum\n"
    "-        y = tl.exp(x.to(tl.float32) - row_max) / row_sum\n"
    "+        y = tl.exp(x.to(tl.float32) - row_max) * inv_sum\n"
)
EXPERIMENT = {
    "name": "reciprocal of the row sum",
    "hypothesis": "one division per row instead of one per element shortens the store loop",
    "change": "compute 1/row_sum once and multiply each exponent by it",
    "evidence": "faster on every shape in the development run",
    "result": "faster",
    "decision": "continue",
}


@dataclass
class ExampleTrace:
    path: Path
    tip: str
    commits: dict[str, str]  # v0, v1, v2 (the promotion), capture


def _memory(n: int, description: str, **extra: object) -> dict:
    geomean = GEOMEANS[n]
    return {
        "version": f"v{n}",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "performance": {
            "latency_us": geomean,
            "latency_us_geomean": geomean,
            "latency_us_by_shape": {"0": geomean / 2, "1": geomean, "2": geomean * 2},
            "measurement_status": "complete",
            "measurement_subject": "candidate",
        },
        "correctness": {"status": "PASS", "max_abs_err": 0.0039, "max_rel_err": 0.0011},
        "quality_gate": {"result": "PASS", "failure_reason": None},
        "optimization": {"action_category": "kernel_change", "action_description": description},
        "open_directions": [],
        "pitfalls_and_fixes": [],
        **extra,
    }


def _json(doc: object) -> bytes:
    return (json.dumps(doc, indent=2) + "\n").encode()


def write_trace(path: str | Path) -> ExampleTrace:
    """Write the example trace as a new bare repository at ``path``."""
    trace = Trace(Path(path), author=AUTHOR, clock=START - 60)
    steps: list[tuple[str, str, dict[str, bytes]]] = [
        (
            "setup",
            "initial: operator files",
            {
                "definition.json": _json(
                    {
                        "name": "softmax",
                        "description": "Row-wise softmax over the last axis of a 2-D fp32 tensor",
                        "axes": {"cols": {"type": "const", "value": 4096}, "rows": {"type": "var"}},
                    }
                ),
                "solution.json": _json({"spec": {"target_hardware": ["NVIDIA H100"]}}),
                "workload.jsonl": "".join(
                    json.dumps({"uuid": f"shape-{i}", "rows": 4**i}) + "\n" for i in range(3)
                ).encode(),
            },
        ),
        (
            "v0",
            "v0: baseline",
            {
                "kernel.py": KERNELS[0].encode(),
                "memory/v0.json": _json(_memory(0, "three passes over each row")),
            },
        ),
        (
            "v1",
            "v1: committed (+20.0%)",
            {
                "kernel.py": KERNELS[1].encode(),
                "memory/v1.json": _json(
                    _memory(1, "merge the max and sum loops with an online rescale")
                ),
            },
        ),
        (
            "v2",
            "episode 1: promote verified long-horizon candidate",
            {
                "kernel.py": KERNELS[2].encode(),
                "memory/long_horizon_e0001.json": _json(
                    {
                        "episode": 1,
                        "version": 2,
                        "status": "candidate_ready",
                        "accepted": True,
                        "journal": {
                            "schema_version": 1,
                            "episode": 1,
                            "memory_version": "v2",
                            "state": "candidate_ready",
                            "experiments": [EXPERIMENT],
                            "outcome": {"summary": EXPERIMENT["change"], "next_directions": []},
                        },
                    }
                ),
                "memory/v2.json": _json(
                    _memory(
                        2,
                        EXPERIMENT["change"],
                        experience={
                            "experiment_count": 1,
                            "recorded_experiment_count": 1,
                            "experiments": [{"index": 1, **EXPERIMENT}],
                        },
                        long_horizon={"status": "candidate_ready", "mode": "full"},
                    )
                ),
            },
        ),
        (
            "capture",
            "v2: profile capture",
            {
                "profiles/v2/summary.txt": b"== ncu summary ==\nKernel: softmax_kernel\n",
                "profiles/v2/analysis/metrics_key_run.json": _json(
                    {"__kernel_name__": "softmax_kernel"}
                ),
            },
        ),
    ]
    marks = {name: trace.commit(subject, files) for name, subject, files in steps}
    trace.write(bare=True)
    commits = {name: trace.ids[mark] for name, mark in marks.items()}
    return ExampleTrace(Path(path), commits["capture"], commits)


def _strategy(trace: ExampleTrace, n: int, slug: str, change: str, snippet: str) -> dict:
    before, after = GEOMEANS[n - 1], GEOMEANS[n]
    return {
        "schema": "clean-1.3",
        "id": f"nvidia.h100.triton.softmax.{slug}",
        "type": "strategy",
        "level": "operator",
        "status": "active",
        "episode_key": f"hopper|triton|softmax|{slug.replace('-', '_')}|operator",
        "retrieval": {
            "scope": {
                "vendor": "nvidia",
                "arch": "hopper",
                "product": "h100",
                "dsl": "triton",
                "operator_family": "softmax",
                "operators": ["softmax"],
            },
            "generality": {"arch": "hopper", "language": "triton", "workload_family": "misc"},
            "signals": {
                "bottleneck": None,
                "metrics": {},
                "shape_regime": {
                    "predicate": "row-wise softmax over the last axis, 4096 columns",
                    "var_axes": ["rows"],
                    "n_shapes": 3,
                },
                "symptoms": ["memory-bound"],
            },
            "technique_tags": [slug, "softmax"],
            "triggers": [f"a Triton row-wise softmax on Hopper could {change}"],
        },
        "payload": {
            "goal": f"Make a row-wise fp32 softmax on H100 faster: {change}.",
            "problem": {
                "target": "NVIDIA H100 (Hopper)",
                "statement": "A Triton softmax over the last axis of a 2-D fp32 tensor with "
                "4096 columns.",
                "operator": "softmax",
                "dsl": "triton",
            },
            "trace": {
                "builds_on": {"approach": "the kernel before this step", "is_baseline": n == 1},
                "techniques_applied_before": [],
                "technique_here": [slug],
            },
            "change": change[0].upper() + change[1:] + ".",
            "mechanism": "The step removes work from the loop every element passes through, "
            "so each row costs fewer instructions.",
            "implementation": {
                "format": "unified-diff (verbatim; '-' = before this step, '+' = after)",
                "snippet": snippet,
                "core_kernel_name": "softmax_kernel",
            },
            "cost": {"edit_scope": "kernel-rewrite", "risk": "low"},
            "next_steps": [],
        },
        "evidence": {
            "summary": {
                "confidence": "measured",
                "bottleneck_evidence": {"basis": "bench-only", "tool": None},
                "measured_on": {
                    "gpu": "H100 (nvidia hopper)",
                    "harness": "the trace's own benchmark harness",
                    "shapes": "3 shapes with 4096 columns",
                },
            },
            "raw": {
                "source_repo": LABEL,
                "version": f"v{n}",
                "git_commit": trace.commits[f"v{n}"],
                "effect": {
                    "basis": "measured",
                    "new_geomean_us": after,
                    "parent_geomean_us": before,
                    "delta_pct": 20.0,
                    "measurement": "geomean over the 3 shapes",
                },
            },
        },
        "worth": {
            "rank": {
                "score": 0.3,
                "tier": "promising",
                "formula": "opt-trace prior",
                "builder_version": "opt-trace-0.1",
            },
            "gain": {
                "basis": "measured",
                "kind": "performance",
                "primary": "latency",
                "pct": 20.0,
                "metrics": [
                    {
                        "metric": "latency",
                        "direction": "lower-better",
                        "delta_pct": 20.0,
                        "before": None,
                        "after": None,
                        "unit": "%",
                        "measured_over": "geomean over 3 shapes",
                        "source": "harness",
                    }
                ],
                "regressions": [],
                "comparable": True,
            },
            "track": new_track(),
        },
    }


def mined_records(trace: ExampleTrace) -> list[dict]:
    """The two milestones as a miner may write them: the online rescale (v1, legacy) and the
    reciprocal (v2, a granular long-horizon record backed by episode 1's journal and a
    profiler capture of the kernel)."""
    online = _strategy(
        trace, 1, "online-rescale-s01", "merge the max and sum loops with an online rescale",
        ONLINE_SNIPPET,
    )  # fmt: skip
    reciprocal = _strategy(
        trace, 2, "reciprocal-row-sum-s02", EXPERIMENT["change"], RECIPROCAL_SNIPPET
    )
    reciprocal["evidence"]["summary"]["bottleneck_evidence"] = {
        "basis": "profiler",
        "tool": "ncu",
        "note": "the capture of this step measured softmax_kernel itself",
    }
    reciprocal["evidence"]["raw"]["evidence_extra"] = {
        "journal": "memory/long_horizon_e0001.json",
        "experiments": [1],
        "promotion_commit": trace.commits["v2"],
    }
    return [online, reciprocal]


def sample_store(workdir: str | Path) -> tuple[Store, rec.RecordFile]:
    """A store holding the example trace under ``refs/kb/traces/<label>`` with the first
    milestone admitted; returns (store, the second milestone's record file, not admitted)."""
    workdir = Path(workdir)
    trace = write_trace(workdir / LABEL)
    store = Store.init(workdir / "store", bare=True)
    store.repo.fetch_into(trace.path, trace.tip, trace_ref(LABEL))
    admitted, candidate = mined_records(trace)
    store.admit(rec.dumps(admitted), "insert", source="example", trace=LABEL)
    return store, rec.load(rec.path_for(candidate), rec.dumps(candidate))
