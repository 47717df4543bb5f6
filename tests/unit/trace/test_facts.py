"""Every stated lesson kept (issue 12 item 4): a dead-end whose text states a condition and
a mechanism, in whatever order or sentence shape, becomes an admitted anti-strategy; one
that states neither is skipped, and the report quotes it so a reader sees what was lost."""

from __future__ import annotations

import pytest

from gitkb.mine.pipeline import mine
from gitkb.testing.trace_builder import Trace
from gitkb.trace.facts import conditions, fact_precheck

# One sentence each, in the shapes traces use: condition first or last, a causal clause or
# a plain statement of what the change does, a colon, a relative clause.
SHAPES = [
    (
        "A persistent grid sized to the 132 SMs of the H100 was tried; with batch sizes below "
        "64 rows the tail wave dominates and the grid-stride loop adds index math to every row",
        {"sm_arch": "H100 (132 SMs)", "shape_regime": "batch sizes below 64 rows"},
    ),
    (
        "Slower for rows under 1024 columns: the extra reduction pass doubles the global "
        "memory traffic of every row",
        {"shape_regime": "rows under 1024 columns"},
    ),
    (
        "On H100, BLOCK_M=256 tiles spill registers, so occupancy drops to one block per SM",
        {"sm_arch": "H100", "shape_regime": "BLOCK_M=256 tiles"},
    ),
    (
        "The running sum overflows past 65504 with fp16 accumulators, which breaks correctness "
        "for rows of 8192 columns",
        {"shape_regime": "rows of 8192 columns", "dtype": "fp16"},
    ),
    (
        "Loading rows through TMA costs more than it saves when rows are shorter than 2048 "
        "elements, as the descriptor setup dominates each load",
        {"shape_regime": "rows are shorter than 2048 elements"},
    ),
]
NO_CAUSE = "Split-K was tried on Hopper as well and came out 12 percent slower than before"


@pytest.mark.parametrize(("text", "condition"), SHAPES)
def test_condition_and_mechanism_in_any_shape(text, condition):
    assert fact_precheck(text) == "ok"
    assert conditions(text) == condition


def test_measurement_only_text_names_no_cause():
    assert fact_precheck(NO_CAUSE) == "reports a measurement, names no cause"
    assert fact_precheck("v3 adds vectorized loads, 3% slower").endswith("names no cause")


@pytest.mark.slow
def test_every_stated_lesson_is_admitted_and_the_lost_one_is_quoted(tmp_path, store):
    t = Trace(tmp_path / "kernel_opt_010_softmax")
    t.setup()
    t.legacy_keep(0, 100.0, "baseline softmax with three passes over each row")
    for n, (text, _) in enumerate(SHAPES, 1):
        if n % 2:
            t.legacy_revert(n, 120.0, "slower", [text])  # the listed form
        else:
            t.legacy_revert(n, 120.0, "slower", body=text)  # the prose form
    t.legacy_revert(len(SHAPES) + 1, 120.0, "slower", [NO_CAUSE])
    t.write()
    result = mine(t.path, store=store)
    actions = {o.seg_id: o.action for o in result.outcomes if o.record_type == "anti-strategy"}
    kept = [f"anti-v{n}-01" for n in range(1, len(SHAPES) + 1)]
    assert actions == {**dict.fromkeys(kept, "insert"), f"anti-v{len(SHAPES) + 1}-01": "skip"}
    admitted = [o.record_id for o in result.outcomes if o.seg_id in kept]
    facts = [store.read_record(i).data["payload"]["established_fact"] for i in admitted]
    assert [f["condition"] for f in facts] == [{**c, "toolchain": "triton"} for _, c in SHAPES]
    report = store.repo.read(store.tip, "reports/kernel_opt_010_softmax/mine.md").decode()
    assert "## Levers not kept" in report
    assert NO_CAUSE in report and "gives no cause" in report
