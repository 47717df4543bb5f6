"""One GEAK kb_artifacts entry at a time (meta.yaml, patch.diff, report.md), as the GEAK
import tests lay them out; whole trees for the fidelity checks are in ``geak_trees``."""

from __future__ import annotations

import json

import yaml

DIFF = """diff --git a/kernels/rmsnorm.py b/kernels/rmsnorm.py
--- a/kernels/rmsnorm.py
+++ b/kernels/rmsnorm.py
@@ -10,3 +10,3 @@ def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, N, BLOCK: tl.constexpr):
     cols = tl.arange(0, BLOCK)
-    x = tl.load(x_ptr + cols, mask=cols < N)
+    x = tl.load(x_ptr + cols, mask=cols < N, eviction_policy="evict_first")
"""


REPORT = """Vectorized loads with an evict-first policy for the activations.

## Key optimizations
The activations are read once, so marking them evict-first keeps the weight
vector resident in L2 across rows; the kernel is bandwidth-bound, so fewer L2
misses on the weights cut its time. Profiled under /home/alice/runs/x by
alice@example.com, notes in notes.md.

## What didn't work
Persistent rows did not help.
"""


def meta(**overrides) -> dict:
    base = {
        "lifecycle": "candidate",
        "carrier": "patch",
        "gfx": "gfx942",
        "kernel_class": "norm",
        "kernel_name": "rmsnorm",
        "language": "triton",
        "metric": {
            "speedup": 1.25,
            "wall_ms": 0.08,
            "baseline_wall_ms": 0.1,
            "gpu_arch": "gfx942",
            "metric_kind": "latency",
            "bench_key": "bk:rmsnorm-suite",
            "case_names": ["n4096", "n8192"],
        },
        "direction": "evict-first loads for activations",
        "content_signature": "csha:" + "0" * 32,
        "reproductions": 0,
        "verified_on": "2025-06-01",
        "verified_stack": {"triton": "3.3.0", "torch": "2.7.0", "rocm": "6.4"},
        "source_eval_dir": "/home/alice/scratch/eval_17",
        "techniques": ["eviction-policy", "vectorized-loads"],
        "retained": True,
        "attestations": {
            "recalls": 3,
            "validations": 2,
            "failures": 1,
            "not_reproduced": 0,
            "inapplicable": 0,
            "history": [
                {"outcome": "validated", "at": "2025-06-02T10:00:00Z", "by": "box-1"},
                {"outcome": "failed", "at": "2025-06-03T10:00:00Z", "by": "box-2"},
            ],
        },
    }
    base.update(overrides)
    return base


def write_entry(
    root,
    exp_id="20250601_101500_a1b2c3",
    slug="rmsnorm__triton__gfx942",
    gfx_dir="gfx942",
    kernel_class="norm",
    data=None,
    diff=DIFF,
    report=REPORT,
    as_json=False,
    raw_meta=None,
):
    """One GEAK entry: <root>/<gfx>/<kernel_class>/<slug>/<exp_id>/{meta.yaml|json, ...}."""
    folder = root / gfx_dir / kernel_class / slug / exp_id
    folder.mkdir(parents=True)
    data = meta() if data is None else data
    if raw_meta is not None:
        (folder / "meta.yaml").write_text(raw_meta)
    elif as_json:
        (folder / "meta.json").write_text(json.dumps(data))
    else:
        (folder / "meta.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    if diff:
        (folder / "patch.diff").write_text(diff)
    (folder / "report.md").write_text(report)
    return folder
