"""TLX knowledge trees as the TLX kernel optimization agent lays them out: the flat layout
(``harnesses/<arch>/knowledge.md``, ``harnesses/<arch>/targets/<kernel>/
optimization_guidance.md``) and the manifest layout (``<vendor>/<topic>/manifest.json``
naming its documents), written here in this project's own words."""

from __future__ import annotations

import json
from pathlib import Path

GFX942 = """# gfx942 (CDNA3)

Notes shared by every target of this architecture. Figures stay in the run artifacts.

## 1. Mechanism

- **A GROUP_M swizzle of the program ids keeps operand tiles in one L2.** Workgroups
  land on the chiplets in turn, so neighbouring tiles share a cache only when the
  launch order is remapped.
- **LDS per workgroup is small.** Ring depth and tile width compete for the same
  bytes.

```python
# a code block is no entry
- not a bullet
```

## 2. Method

- **Warm the clocks continuously before one timed window.** Bursts never settle;
  the harness notes are in `notes/bench.md`.

## 3. Open: no evidence either way

- Whether waves_per_eu matters here; it has never been swept.
"""

HOPPER_GEMM = """# gemm on hopper: structure and invariants

## Invariants

- **Split the warps into producer and consumer warp groups.** The consumers only do
  the math.
- **Accumulate in fp32.** The fp16 accumulator loses the low bits of long K loops.
"""

BLACKWELL_NOTES = """# Blackwell MMA notes

## Mechanism

- **Keep the accumulator in TMEM with tcgen05 MMA.** Registers stay free for the
  epilogue.
"""

HOST = """# vector add on the host

## Notes

- **Nothing to tune on a CPU.**
"""

# (topic folder under knowledge/, its manifest, its document)
MANIFESTS = {
    "nvidia/blackwell_mma": (
        {"priority": 10, "backends": ["cuda"], "architectures": ["blackwell", "sm_100"],
         "documents": ["notes.md"]},
        BLACKWELL_NOTES,
    ),
    "nvidia/mystery": (
        {"priority": 10, "backends": ["cuda"], "architectures": ["mystery_9000"],
         "documents": ["notes.md"]},
        BLACKWELL_NOTES,
    ),
}  # fmt: skip


def tlx_tree(base: Path) -> Path:
    """A TLX agent's folder with knowledge in both layouts, a host target (no GPU) and a
    topic for hardware gitkb does not know."""
    root = base / "kernel_optimization"
    files = {
        "harnesses/gfx942/knowledge.md": GFX942,
        "harnesses/hopper/targets/gemm/optimization_guidance.md": HOPPER_GEMM,
        "harnesses/host/targets/vector_add/optimization_guidance.md": HOST,
    }
    for topic, (manifest, document) in MANIFESTS.items():
        files[f"knowledge/{topic}/manifest.json"] = json.dumps(manifest)
        files[f"knowledge/{topic}/notes.md"] = document
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root
