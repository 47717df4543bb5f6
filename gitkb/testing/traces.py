"""Ready-made traces: a legacy campaign, a long-horizon one, a kernel alone. Each
docstring says what mining must find in it."""

from __future__ import annotations

from pathlib import Path

from gitkb.testing.trace_builder import Trace
from gitkb.testing.trace_files import kernel_source

SPILL_DEADEND = (
    "BLOCK 8192 whole-row load spills registers because 128 threads hold 64 fp32 values each"
)
SMEM_DEADEND = "double buffering in shared memory does not fit on sm_90 at 228 KB per SM"


TMA_EXPERIMENT = {
    "name": "tma row loads",
    "hypothesis": "bulk copies hide the load latency",
    "change": "load each row with a TMA descriptor",
    "evidence": "slower on every shape",
    "result": "slower on sm_100 because the TMA descriptor setup per row exceeds the load "
    "time of a 16 KB row, so the copy engine never overlaps",
    "decision": "revert",
}


def legacy_trace(path: Path, hardware: str | None = "NVIDIA H100", bare: bool = False) -> Path:
    """A legacy trace: v0 baseline 100 us, v1 80 us (milestone), v2 reverted with two listed
    dead-ends, v3 60 us (milestone, memory in a follow-up commit, with a curated pitfall),
    v4 59.9 us (under 1.5%), v5 reverted in prose, v6 50 us (mega milestone, final)."""
    t = Trace(path)
    t.setup(hardware=hardware)
    t.legacy_keep(0, 100.0, "baseline softmax with three passes over each row")
    t.legacy_keep(
        1,
        80.0,
        "merge the max and sum loops with an online rescale of the running sum",
        pct="+20.0%",
        open_directions=[{"direction": "keep short rows in registers", "rationale": "one read"}],
    )
    t.legacy_revert(
        2,
        95.0,
        "slower",
        [SPILL_DEADEND, SMEM_DEADEND],
        next_direction="try vectorized loads",
    )
    t.legacy_keep(
        3,
        60.0,
        "vectorized 128-bit loads along the row",
        pct="+25.0%",
        memory_later=True,
        pitfalls=[
            {
                "pitfall": "vector width 8 on odd column counts",
                "explanation": "misaligned tail on sm_90 because cols % 8 != 0 breaks the "
                "128-bit load alignment, so the tail lanes read past the row",
                "fix": "scalar epilogue for the remainder columns",
            },
            "a bare string pitfall",
            None,
            {"error_type": "compilation", "error_message": "bad", "lesson": "x"},
        ],
    )
    t.legacy_keep(4, 59.9, "retuned num_warps from 4 to 8", pct="+0.2%")
    t.legacy_revert(
        5,
        61.0,
        "regressed",
        body="Persistent grid with one program per SM was slower on sm_90 because the "
        "row loop serializes the tail wave and occupancy drops to one block per SM.",
    )
    t.legacy_keep(6, 50.0, "two rows per program with num_warps 8", pct="+16.7%")
    return t.write(bare=bare)


def long_horizon_trace(
    path: Path, hardware: str | None = "NVIDIA B200", bare: bool = False
) -> Path:
    """A long-horizon trace: V0 (two commits) 200 us, V1 (two commits) 100 us, episode 1
    promotes v2 at 80 us, episode 2 ends pivot (v3 carries v2 forward, one rejected experiment
    with a mechanism), episode 3 promotes v4 at 70 us, episode 4 ends blocked (v5)."""
    t = Trace(path)
    t.setup(hardware=hardware)
    t.v0_two_commit(200.0)
    t.v1_two_commit(100.0)
    t.promote(
        1,
        2,
        80.0,
        20.0,
        "two warps per row with partial sums kept in registers until the final shuffle",
    )
    t.non_promotion(
        3,
        2,
        "pivot",
        "v2",
        80.0,
        experiments=[TMA_EXPERIMENT],
    )
    t.promote(
        3,
        4,
        70.0,
        12.5,
        "cache the row maximum in shared memory across the two passes",
    )
    t.non_promotion(5, 4, "blocked", "v4", 70.0, failure_reason="sandbox unavailable")
    return t.write(bare=bare)


def kernel_only_trace(path: Path) -> Path:
    """A trace with only ``.git`` and ``kernel.py`` (one commit, no memory, no metadata)."""
    t = Trace(path)
    t.commit("initial kernel", {"kernel.py": kernel_source(0)})
    return t.write()
