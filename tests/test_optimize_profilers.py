"""Native profiler output parsing (ncu, rocprofv3) on recorded sample output, and the
backend mappings in targets/<backend>/profiler.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gitkb.optimize.loop import profiler_mapping
from gitkb.optimize.profilers import ncu, rocprof

DATA = Path(__file__).parent / "data"


def test_ncu_csv_filtered_by_kernel_name():
    text = (DATA / "ncu_raw_sample.csv").read_text()
    metrics = [
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "launch__registers_per_thread",
        "l1tex__t_bytes.sum",
    ]
    out = ncu.parse(text, r"^softmax", metrics)
    assert out["kernel_name"] == "softmax_kernel" and out["launches"] == 2
    assert out["duration_us"] == pytest.approx((18.432 + 18.560) / 2)  # ns, thousands commas
    assert out["metrics"]["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(63.3)
    # n/a and absent counters are null with a diagnostic, never zero
    assert out["metrics"]["launch__registers_per_thread"] is None
    assert out["metrics"]["l1tex__t_bytes.sum"] is None
    assert any("l1tex__t_bytes.sum" in d for d in out["diagnostics"])


def test_ncu_refuses_the_non_target_kernel_and_reports_no_match():
    text = (DATA / "ncu_raw_sample.csv").read_text()
    unfiltered = ncu.parse(text, None)
    assert unfiltered["kernel_name"] == "softmax_kernel"
    assert "skipped non-target kernel" in unfiltered["diagnostics"][0]
    missing = ncu.parse(text, "^gemm")
    assert missing["duration_us"] is None and "no launch" in missing["diagnostics"][-1]
    assert ncu.parse("ncu: error", "x")["diagnostics"] == ["no ncu CSV header found"]


def test_rocprofv3_kernel_trace_and_counters():
    trace = (DATA / "rocprofv3_kernel_trace_sample.csv").read_text()
    counters = (DATA / "rocprofv3_counter_collection_sample.csv").read_text()
    out = rocprof.parse(
        trace, "softmax_kernel", counters, ["SQ_WAVES", "GRBM_GUI_ACTIVE", "FETCH_SIZE"]
    )
    assert out["kernel_name"] == "softmax_kernel.kd" and out["launches"] == 2
    assert out["duration_us"] == pytest.approx((21.0 + 23.0) / 2)
    assert out["metrics"] == {"SQ_WAVES": 16384.0, "GRBM_GUI_ACTIVE": 52000.0, "FETCH_SIZE": None}
    assert any("FETCH_SIZE" in d for d in out["diagnostics"])
    assert rocprof.parse(trace, "^gemm")["duration_us"] is None


def test_backend_mappings():
    assert profiler_mapping("cpu")["tool"] == "none" and profiler_mapping("cpu")["reason"]
    nvidia = profiler_mapping("nvidia")
    assert nvidia["tool"] == "ncu"
    argv = nvidia["argv"]
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--kernel-name") + 1].startswith("regex:")
    assert profiler_mapping("amd")["tool"] == "rocprofv3"
    assert "--kernel-include-regex" in profiler_mapping("amd")["argv"]
    assert profiler_mapping("tpu")["tool"] == "none"
    for backend in ("cpu", "nvidia", "amd"):
        folder = Path(__file__).parents[1] / "targets" / backend
        tomllib.loads((folder / "hardware.toml").read_text())
        assert (folder / "GUIDE.md").is_file()
        compile((folder / "harness_template.py").read_text(), "harness_template.py", "exec")
