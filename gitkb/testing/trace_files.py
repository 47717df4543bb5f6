"""The files a trace's commits hold, as an optimizer writes them: ``kernel.py`` for a
version, ``memory/v<N>.json`` (the measurement and what changed), the canonical memory's
experience block, the SOL manifest. Every number a test asserts on is chosen here."""

from __future__ import annotations

import json
from dataclasses import dataclass

AUTHOR = "Trace Agent <agent@example.invalid>"
LONG_HORIZON_AUTHOR = "atrex-long-horizon <atrex-long-horizon@local>"
START_TIME = 1_700_000_000


@dataclass(slots=True, frozen=True)
class Symlink:
    """A tree entry of mode 120000 pointing at ``target``."""

    target: str


def file_bytes(value: object) -> bytes:
    """A file given as bytes, text, or a JSON-able dict/list, as the bytes committed."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return (json.dumps(value, indent=2) + "\n").encode("utf-8")


def kernel_source(n: int, dsl: str = "triton", note: str = "") -> str:
    """A kernel.py for version ``n``: a few lines change with every version, all > 12 chars."""
    header = {
        "triton": "import triton\nimport triton.language as tl\n",
        "gluon": "from triton.experimental import gluon  # gluon kernel\n",
        "cuda": "from torch.utils.cpp_extension import load_inline\n",
        "any": "import torch\n",
    }[dsl]
    lines = [
        header,
        "",
        "@triton.jit" if dsl == "triton" else "# kernel entry",
        "def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):",
        "    row = tl.program_id(0)",
        f"    cols = tl.arange(0, BLOCK)  # step {n}",
        f"    x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other=-{n + 1}.0)",
        f"    scale_{n} = tl.full([BLOCK], {n + 2}, tl.float32)",
        "    m = tl.max(x, axis=0)",
        "    e = tl.exp(x - m)",
        f"    y = e / tl.sum(e, axis=0) * scale_{n} / {n + 2}",
        "    tl.store(out_ptr + row * n_cols + cols, y, mask=cols < n_cols)",
        "",
    ]
    if note:
        lines.insert(4, f"    # {note}")
    return "\n".join(lines) + "\n"


def memory(
    version: str,
    geomean: float | None,
    *,
    by_shape: dict | None = None,
    correctness: str | None = "PASS",
    gate: str | None = "PASS",
    gate_failure: str | None = None,
    description: str = "",
    category: str | None = None,
    pitfalls: list | None = None,
    open_directions: list | None = None,
    performance: dict | None = None,
    expected_impact: str = "",
    **extra: object,
) -> dict:
    """A ``memory/v<N>.json`` document; ``performance`` keys override the defaults."""
    perf: dict = {}
    if geomean is not None:
        perf = {
            "latency_us": geomean,
            "latency_us_geomean": geomean,
            "latency_us_arith_mean": round(geomean * 1.1, 3),
            "latency_us_by_shape": by_shape
            if by_shape is not None
            else {"0": round(geomean * 0.5, 3), "1": geomean, "2": round(geomean * 2, 3)},
            "measurement_status": "complete",
            "measurement_subject": "candidate",
        }
    perf.update(performance or {})
    doc: dict = {"version": version, "timestamp": "2026-01-01T00:00:00+00:00", "performance": perf}
    if correctness is not None:
        doc["correctness"] = {"status": correctness, "max_abs_err": 0.0039, "max_rel_err": 0.0011}
    if gate is not None:
        doc["quality_gate"] = {"result": gate, "failure_reason": gate_failure}
    doc["optimization"] = {
        "action_category": category or "kernel_change",
        "action_description": description,
        "expected_impact": expected_impact,
    }
    doc["open_directions"] = open_directions or []
    doc["pitfalls_and_fixes"] = pitfalls or []
    doc.update(extra)
    return doc


# The journal keys the producer copies into canonical memory; any other key of an
# experiment is folded into one sorted-key JSON ``details`` string (long_horizon/campaign.py).
MEMORY_EXPERIMENT_FIELDS = ("name", "hypothesis", "change", "evidence", "result", "decision",
                            "timestamp")  # fmt: skip


def memory_experience(experiments: list[dict]) -> dict:
    """``_memory_experience``: each journal experiment as canonical memory holds it."""
    compact = []
    for index, raw in enumerate(experiments, start=1):
        entry: dict = {"index": index}
        entry |= {k: str(raw[k]) for k in MEMORY_EXPERIMENT_FIELDS if raw.get(k)}
        extra = {k: v for k, v in raw.items() if k not in MEMORY_EXPERIMENT_FIELDS}
        if extra:
            entry["details"] = json.dumps(extra, ensure_ascii=False, sort_keys=True)
        compact.append(entry)
    return {
        "experiment_count": len(experiments),
        "recorded_experiment_count": len(compact),
        "experiments": compact,
    }


def sol_manifest(name: str, hardware: list) -> dict:
    return {
        "name": f"{name}_v0_pytorch",
        "definition": name,
        "author": "atrex-aka",
        "spec": {
            "languages": ["pytorch"],
            "target_hardware": hardware,
            "entry_point": "kernel.py::run",
            "dependencies": ["torch"],
            "destination_passing_style": True,
        },
        "sources": [{"path": "kernel.py"}],
    }
