"""Several traces of one operator (rmsnorm) at different shapes and hardware pages, as
the card tests and the flywheel mine them, and `git kb curate` run on the store."""

from __future__ import annotations

import json
from pathlib import Path

from gitkb.store import Store
from gitkb.testing.trace_builder import Trace
from gitkb.testing.trace_files import kernel_source
from helpers.run import kb

VECTOR = "vectorized 128-bit loads along the row"


PERSISTENT = (
    "persistent grid with one program per SM was slower on sm_90 because the row loop "
    "serializes the tail wave and occupancy drops"
)


VECTOR_FAILED = (
    "vectorized 128-bit loads along the row were slower on sm_90 because fp16 rows of 4096 "
    "split the vector tail"
)


# (trace number, hidden size, hardware, vectorized-load gain or None for a dead end,
#  persistent-grid dead end)
CAMPAIGNS = (
    (1, 4096, "NVIDIA H100", 20.0, True),
    (2, 8192, "NVIDIA H100", 30.0, True),
    (3, 4096, "NVIDIA H200", None, False),
)


def launch(version: int) -> str:
    """The launch configuration a version's kernel.py ends with: from version 3 on, two rows
    per program on 8 warps (the diff shows the change its sentence names)."""
    rows, warps = (2, 8) if version >= 3 else (1, 4)
    return f"\nROWS_PER_PROGRAM = {rows}\nLAUNCH = dict(num_warps={warps})\n"


def rmsnorm_trace(root: Path, n: int, hidden: int, hardware: str, gain, persistent) -> Path:
    t = Trace(root / f"kernel_opt_00{n}_rmsnorm_h{hidden}")
    t.setup(hardware=hardware, name=f"rmsnorm_h{hidden}",
            description=f"RMSNorm over rows of {hidden} fp16 values")  # fmt: skip
    kernel = lambda v: kernel_source(v + 10 * n) + launch(v)  # noqa: E731 - its own code
    t.legacy_keep(0, 100.0, "baseline rmsnorm, one program per row", kernel=kernel(0))
    if gain is None:
        t.legacy_revert(1, 104.0, "slower", [VECTOR_FAILED])
    else:
        t.legacy_keep(1, round(100.0 / (1 + gain / 100), 3), VECTOR, pct=f"+{gain}%",
                      kernel=kernel(1))  # fmt: skip
    if persistent:
        t.legacy_revert(2, 120.0, "slower", [PERSISTENT])
    t.legacy_keep(3, 70.0, "two rows per program with num_warps 8", pct="+10%", kernel=kernel(3))
    return t.write()


def curate(store: Store, *extra: str) -> dict:
    done = kb("curate", "--cards", *extra, "--store", str(store.location))
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)
