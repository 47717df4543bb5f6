"""Native profiler output parsing (ncu, rocprofv3) on recorded sample output, and the
backend mappings in targets/<backend>/profiler.toml."""

from __future__ import annotations

import json
import tomllib

import pytest
from helpers import DATA, ROOT

from gitkb.optimize.profilers import ncu, profiler_mapping, rocprof


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
        folder = ROOT / "targets" / backend
        tomllib.loads((folder / "hardware.toml").read_text())
        assert (folder / "GUIDE.md").is_file()
        compile((folder / "harness_template.py").read_text(), "harness_template.py", "exec")


# --------------------------------------------------------------------------- Proton


def test_proton_hatchet_tree_main_kernel_and_the_rest():
    from gitkb.optimize.profilers import proton

    document = json.loads((DATA / "proton_sample.hatchet").read_text())
    out = proton.parse(document, r"^softmax")
    # softmax_kernel under two scopes: 184320 + 36864 ns over 10 + 2 launches
    assert out["kernel_name"] == "softmax_kernel" and out["launches"] == 12
    assert out["duration_us"] == pytest.approx(221.184 / 12)
    assert out["metrics"]["main_kernel_us"] == pytest.approx(221.184)
    assert out["metrics"]["non_main_kernel_us"] == pytest.approx(20.48)  # the fused copy
    assert any("skipped non-target kernel" in d for d in out["diagnostics"])
    assert [k["name"] for k in out["kernels"]] == ["softmax_kernel", "triton_poi_fused_copy_0"]
    # without a filter the leaf with the most time is the main kernel; a path works as well
    assert proton.summarize(str(DATA / "proton_sample.hatchet"), None)["kernel_name"] == (
        "softmax_kernel"
    )
    missing = proton.parse(document, "^gemm")
    assert missing["duration_us"] is None and "no kernel matching" in missing["diagnostics"][-1]
    with pytest.raises(ValueError):
        proton.parse({"not": "a tree"}, None)


def test_normalize_parses_what_a_harness_returns():
    from gitkb.optimize.profilers import evidence_line, normalize

    hatchet = str(DATA / "proton_sample.hatchet")
    only_proton = normalize({"raw": {"proton": hatchet}, "scope": {"kernel": "softmax"}})
    assert only_proton["parsed"]["proton"]["kernel_name"] == "softmax_kernel"
    assert only_proton["duration_us"] == pytest.approx(221.184 / 12)
    assert only_proton["duration_source"] == "proton"
    assert "proton softmax_kernel 18.432 us x12, other kernels 20.480 us" in evidence_line(
        only_proton
    )
    by_artifact = normalize({"artifacts": {"trace": hatchet}, "kernel_filter": "softmax"})
    assert by_artifact["parsed"]["proton"]["launches"] == 12
    both = normalize(
        {
            "raw": {"proton": hatchet, "ncu": (DATA / "ncu_raw_sample.csv").read_text()},
            "kernel_filter": "^softmax",
        }
    )
    assert both["duration_source"] == "ncu"  # the hardware profiler's duration wins
    assert both["duration_us"] == pytest.approx((18.432 + 18.560) / 2)
    stated = normalize({"duration_us": 3.0, "raw": {"proton": hatchet}})
    assert stated["duration_us"] == 3.0 and "duration_source" not in stated
    broken = normalize({"raw": {"proton": "/nonexistent.hatchet"}})
    assert "unreadable" in broken["parsed"]["proton"]["diagnostics"][0]
    assert normalize({"counters": {"x": None}}) == {"counters": {"x": None}}


# --------------------------------------------------------------------------- escalation

PROFILED_HARNESS = """
import json, os


def build(source, target):
    ns = {}
    exec(source, ns)
    return ns


def verify(k, case):
    return k["kernel"](3) == 3


def benchmark(k, case, repetitions):
    return [k["COST"]] * repetitions


def profile(k, case, request):
    # Proton output whose main-kernel time is the kernel's PROFILED constant.
    ns = int(k["PROFILED"] * 1000)
    tree = {"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 0}, "children": [
        {"frame": {"name": "main_kernel"}, "metrics": {"count": 1, "time (ns)": ns}}]}
    with open(os.environ["LEVELS"], "a") as fh:
        fh.write(request["experiment_id"] + " " + request["level"] + "\\n")
    return {"raw": {"proton": [tree, {}]}, "scope": {"kernel": "main_kernel"}}
"""

PROFILED_KERNEL = "COST = 100.0\nPROFILED = 100.0\n\n\ndef kernel(x):\n    return x\n"


def profiled_run(tmp_path, candidates: list[tuple[str, dict]], budget: dict, profile=True):
    from gitkb.optimize import loop
    from gitkb.optimize.providers import ProviderOptions

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "harness.py").write_text(PROFILED_HARNESS)
    (bundle / "kernel.py").write_text(PROFILED_KERNEL)
    (bundle / "cases.json").write_text(json.dumps([{"case_id": "a", "parameters": {}}]))
    levels = tmp_path / "levels"
    target = {"backend": "cpu", "device": "cpu", "environment": {"LEVELS": str(levels)}}
    (bundle / "target.json").write_text(json.dumps(target))
    folder = tmp_path / "candidates"
    folder.mkdir()
    for index, (source, meta) in enumerate(candidates):
        (folder / f"{index:02d}.py").write_text(source)
        (folder / f"{index:02d}.json").write_text(json.dumps(meta))
    lines: list[str] = []
    result = loop.run(
        loop.RunConfig(
            bundle=bundle,
            output=tmp_path / "out",
            provider="replay",
            provider_options=ProviderOptions(replay_dir=str(folder)),
            budget_flags={"benchmark_repetitions": 3, **budget},
            profile=profile,
            progress=lines.append,
        )
    )
    asked = levels.read_text().splitlines() if levels.exists() else []
    return result, "\n".join(lines), dict(line.split() for line in asked)


def kernel_with(cost: float, profiled: float) -> str:
    return PROFILED_KERNEL.replace("COST = 100.0", f"COST = {cost}").replace(
        "PROFILED = 100.0", f"PROFILED = {profiled}"
    )


@pytest.mark.slow
def test_profiles_escalate_as_the_tlx_rules_say(tmp_path):
    result, log, requested = profiled_run(
        tmp_path,
        [
            # r001-c000: the benchmark says 2x, Proton says slower: measured again, deep,
            # and rejected on the profiled regression.
            (kernel_with(50.0, 120.0), {"change": "fewer copies"}),
            # r002-c000: a scheduling hypothesis is profiled deep from the start.
            (kernel_with(80.0, 80.0), {"hypothesis": "more pipeline stages hide the latency"}),
        ],
        {"max_rounds": 2, "candidates_per_round": 1},
    )
    assert requested["baseline"] == "deep"
    assert requested["r001-c000"] == "summary" and requested["r001-c000-rerun"] == "deep"
    assert "r001-c000 measured again with a deep profile: benchmark and profile disagree" in log
    first = next(e for e in result.document["experiments"] if e["experiment_id"] == "r001-c000")
    assert first["status"] == "rejected"
    assert "profiled duration of a regressed" in first["diagnostics"]
    # after the dry first round the current best got a deep profile for the next proposal
    assert requested["r001-deep"] == "deep"
    assert requested["r002-c000"] == "deep"
    second = next(e for e in result.document["experiments"] if e["experiment_id"] == "r002-c000")
    assert second["status"] == "promoted" and second["profile_level"] == "deep"
    assert requested["final"] == "deep"
    assert "r002-c000 profile a: proton main_kernel 80.000 us x1" in log
    profile = json.loads(
        (tmp_path / "out" / "experiments" / "r002-c000" / "profile.json").read_text()
    )
    assert profile["a"]["parsed"]["proton"]["duration_us"] == pytest.approx(80.0)
    memory = json.loads((tmp_path / "out" / "trace" / "memory" / "v2.json").read_text())
    assert memory["profile_evidence"]["tool_used"] == "proton"


@pytest.mark.slow
def test_no_profile_sends_no_profile_requests(tmp_path):
    result, _, requested = profiled_run(
        tmp_path, [(kernel_with(50.0, 50.0), {})], {"max_rounds": 1}, profile=False
    )
    assert result.exit_code == 0 and requested == {}
