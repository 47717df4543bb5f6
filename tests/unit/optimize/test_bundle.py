"""The Triton softmax example bundle (targets/nvidia/examples/triton_softmax), on the CPU.

Always: gitkb's bundle validation, the Hopper target, the knob declarations and
the knobs provider's sweep over them, the harness importing without torch and
refusing to build without a GPU in one line, and its ncu wiring against a fake
ncu. Where torch and triton are importable (a CPU build is enough): the kernel
compiled to sm_90 cubins, and real evaluations through the harness worker in
Triton's interpreter (a correct kernel passes, wrong and broken ones do not).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from helpers import DATA, ROOT

from gitkb import targets
from gitkb.optimize import bundle as bundle_mod
from gitkb.optimize import providers, scoring
from gitkb.optimize.profilers import profiler_mapping
from gitkb.optimize.providers import knobs
from gitkb.optimize.setup import hardware_tokens
from gitkb.optimize.worker import run_harness

BUNDLE = ROOT / "targets" / "nvidia" / "examples" / "triton_softmax"
SOURCE = (BUNDLE / "kernel.py").read_text(encoding="utf-8")
CASES = json.loads((BUNDLE / "cases.json").read_text(encoding="utf-8"))
TARGET = json.loads((BUNDLE / "target.json").read_text(encoding="utf-8"))
NCU = profiler_mapping("nvidia")


def load_harness():
    spec = importlib.util.spec_from_file_location("triton_softmax_harness", BUNDLE / "harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs_triton():
    pytest.importorskip("torch")
    pytest.importorskip("triton")


def settings(source: str) -> dict:
    return {name: knobs.current_value(source, name) for name in TARGET["tunables"]}


# ------------------------------------------------------------------ the bundle's files


def test_gitkb_accepts_the_bundle_with_one_protected_case():
    bundle = bundle_mod.load(bundle_mod.sources(BUNDLE))
    assert bundle.backend == "nvidia" and bundle.kernel == BUNDLE / "kernel.py"
    assert len(bundle.cases) >= 3
    assert [c.case_id for c in bundle.cases if c.protected] == ["fp32-4096x3000-large"]
    harness = load_harness()
    for case in bundle.cases:
        assert case.parameters["dtype"] in harness.TOLERANCES, case.case_id
        assert case.parameters["rows"] > 0 and case.parameters["cols"] > 0
    # a ragged row width, so the masked tail of a tile is verified for every BLOCK_N
    assert any(c.parameters["cols"] % max(TARGET["tunables"]["BLOCK_N"]) for c in bundle.cases)


def test_target_is_a_hopper_device_profiled_by_ncu():
    assert hardware_tokens(TARGET) == ["sm_90"]
    hardware = targets.lookup(TARGET["device"])
    assert (hardware.vendor, hardware.arch) == ("nvidia", "hopper")
    assert targets.lookup(TARGET["architecture"]).arch == "hopper"
    assert NCU["tool"] == "ncu" and "{kernel_regex}" in " ".join(NCU["argv"])
    assert TARGET["operator"] == "softmax" and TARGET["optimization_guidance"]


def test_budget_lets_two_runs_fit_the_ten_minute_check():
    budget = bundle_mod.Budget.effective(
        {}, bundle_mod.load(bundle_mod.sources(BUNDLE)).budget_file
    )[0]
    # each run: the loop's wall budget, then one finalist evaluation; install time besides
    assert 2 * (budget.max_total_seconds + budget.max_candidate_seconds) <= 660
    moves = sum(len(v) - 1 for v in TARGET["tunables"].values())
    assert budget.max_rounds * budget.candidates_per_round >= moves


def test_every_tunable_is_a_literal_of_the_kernel_within_its_declared_values():
    assert list(TARGET["tunables"]) == ["BLOCK_N", "NUM_WARPS", "NUM_STAGES"]
    for name, value in settings(SOURCE).items():
        assert value in TARGET["tunables"][name], name
    assert all(v & (v - 1) == 0 for v in TARGET["tunables"]["BLOCK_N"])  # tl.arange needs 2^k


@pytest.mark.slow
def test_knobs_provider_sweeps_every_declared_value_once():
    provider = providers.load("knobs", providers.ProviderOptions(), TARGET["tunables"])
    seen = {scoring.source_key(SOURCE)}
    moves = []
    for index in range(1, 50):
        context = providers.ProposalContext(
            experiment_id=f"r001-c{index:03d}",
            best_source=SOURCE,
            baseline_source=SOURCE,
            best_id="baseline",
            target=TARGET,
            cases=CASES,
            best_cases=[],
            best_profile={},
        )
        candidate = provider.propose(context)
        if candidate is None:
            break
        assert scoring.precheck(candidate.source, SOURCE, seen) is None, candidate.change
        seen.add(scoring.source_key(candidate.source))
        changed = {k: v for k, v in settings(candidate.source).items() if v != settings(SOURCE)[k]}
        assert len(changed) == 1, candidate.change
        moves.append(changed)
    expected = [
        {name: value}
        for name, values in TARGET["tunables"].items()
        for value in values
        if value != settings(SOURCE)[name]
    ]
    assert moves == expected


# ------------------------------------------------------------------ the harness, no GPU


HARNESS_WITHOUT_TORCH = """
import importlib.util, json, sys
sys.modules["torch"] = None  # import torch raises ImportError, as where it is not installed
sys.modules["triton"] = None
spec = importlib.util.spec_from_file_location("h", sys.argv[1])
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
case = json.loads(sys.argv[2])
built = h.build(open(sys.argv[3]).read(), {})
try:
    h.benchmark(None, case, 3)
    benchmark = None
except RuntimeError as exc:
    benchmark = str(exc)
request = {"level": "summary", "native_profiler": {"tool": "ncu", "metrics": ["m"]}}
print(json.dumps({
    "build": built,
    "verify": h.verify(None, case),
    "benchmark": benchmark,
    "profile": h.profile(None, case, request),
}))
"""


def test_harness_imports_and_refuses_cleanly_without_torch(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            HARNESS_WITHOUT_TORCH,
            str(BUNDLE / "harness.py"),
            json.dumps(CASES[0]),
            str(BUNDLE / "kernel.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["build"]["success"] is False and out["build"]["artifact"] is None
    (reason,) = out["build"]["diagnostics"]
    assert reason.startswith("PyTorch is not importable here") and "\n" not in reason
    assert out["verify"] == {"passed": False, "diagnostics": [reason], "metrics": {}}
    assert out["benchmark"] == reason
    assert out["profile"]["duration_us"] is None and out["profile"]["metrics"] == {"m": None}


def test_harness_module_does_not_import_torch_at_load(tmp_path):
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('h', {str(BUNDLE / 'harness.py')!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_build_without_a_cuda_device_says_so_in_one_line(monkeypatch):
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    built = load_harness().build(SOURCE, TARGET)
    assert built["success"] is False
    (reason,) = built["diagnostics"]
    assert reason.startswith("no CUDA device: torch.cuda.is_available() is False")
    assert "\n" not in reason


def test_summary_requests_and_missing_ncu_report_null_counters_with_the_reason(monkeypatch):
    harness = load_harness()
    kernel = harness.Kernel(None, SOURCE)
    summary = harness.profile(kernel, CASES[0], {"level": "summary", "native_profiler": NCU})
    assert summary["duration_us"] is None and set(summary["metrics"]) == set(NCU["metrics"])
    assert all(v is None for v in summary["metrics"].values())
    assert "deep requests only" in summary["diagnostics"][0]
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    if harness.find_ncu() is not None:
        pytest.skip("ncu is installed under /usr/local/cuda here")
    deep = harness.profile(kernel, CASES[0], {"level": "deep", "native_profiler": NCU})
    assert deep["tool"] == "none" and deep["duration_us"] is None
    assert deep["diagnostics"][0].startswith("ncu not found")


FAKE_NCU = """#!{python}
import json, os, sys
with open(os.environ["FAKE_NCU_ARGV"], "w") as fh:
    json.dump({{"argv": sys.argv[1:], "kernel": open(os.environ["GITKB_KERNEL_FILE"]).read()}}, fh)
sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
sys.stderr.write(os.environ.get("FAKE_NCU_STDERR", ""))
sys.exit(int(os.environ.get("FAKE_NCU_EXIT", "0")))
"""


def fake_ncu(tmp_path, monkeypatch, exit_code=0, stderr=""):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    csv = (DATA / "ncu_raw_sample.csv").read_text().replace("softmax_kernel", "softmax_rows_kernel")
    (tmp_path / "capture.csv").write_text(csv)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_NCU_CSV", str(tmp_path / "capture.csv"))
    monkeypatch.setenv("FAKE_NCU_EXIT", str(exit_code))
    monkeypatch.setenv("FAKE_NCU_STDERR", stderr)
    return ncu


def test_deep_profile_runs_this_harness_once_under_ncu_filtered_to_the_kernel(
    tmp_path, monkeypatch
):
    ncu = fake_ncu(tmp_path, monkeypatch)
    harness = load_harness()
    case = CASES[2]
    request = {"level": "deep", "native_profiler": NCU, "artifacts_dir": str(tmp_path / "art")}
    out = harness.profile(harness.Kernel(None, SOURCE), case, request)
    assert out["tool"] == "ncu" and out["kernel_name"] == "softmax_rows_kernel"
    assert out["duration_us"] == pytest.approx((18.432 + 18.560) / 2)
    assert out["level"] == "deep" and out["launches"] == 2
    called = json.loads((tmp_path / "argv.json").read_text())
    argv = called["argv"]
    assert argv[argv.index("--kernel-name") + 1] == "regex:softmax_rows_kernel"
    assert argv[argv.index("--metrics") + 1] == ",".join(NCU["metrics"])
    assert argv[argv.index("--clock-control") + 1] == "none"
    child = argv[argv.index("--") + 1 :]
    assert child[:3] == [sys.executable, str(BUNDLE / "harness.py"), "--run-once"]
    assert json.loads(child[3]) == case
    assert called["kernel"] == SOURCE  # the child launches the candidate, not the shipped file
    saved = tmp_path / "art" / f"ncu-{case['case_id']}.csv"
    assert saved.read_text() == (tmp_path / "capture.csv").read_text()
    assert harness.find_ncu() == str(ncu)


def test_ncu_without_counter_permission_is_a_diagnostic_not_a_zero(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch, exit_code=1, stderr="==ERROR== ERR_NVGPUCTRPERM\n")
    (tmp_path / "capture.csv").write_text("==PROF== Connected to process 1\n")
    harness = load_harness()
    request = {"level": "deep", "native_profiler": NCU, "artifacts_dir": str(tmp_path / "art")}
    out = harness.profile(harness.Kernel(None, SOURCE), CASES[0], request)
    assert out["duration_us"] is None
    assert all(v is None for v in out["metrics"].values())
    assert "ERR_NVGPUCTRPERM" in out["diagnostics"][0]


# ------------------------------------------------------------------ with torch and triton


@pytest.mark.slow
def test_kernel_and_extreme_knobs_compile_to_sm90_cubins():
    needs_triton()
    harness = load_harness()
    largest = SOURCE
    for name, values in TARGET["tunables"].items():
        largest = knobs.rewrite(largest, name, max(values))
    for source in (SOURCE, largest):
        for case in {c["parameters"]["dtype"]: c for c in CASES}.values():
            compiled = harness.compile_check(source, case)
            # ncu's --kernel-name filter must match what Triton names the kernel
            assert compiled["kernel"] == harness.KERNEL_REGEX
            assert 0 <= compiled["shared_bytes"] <= 232448 and compiled["cubin_bytes"] > 0
    assert compiled["settings"] == {"BLOCK_N": 2048, "NUM_WARPS": 8, "NUM_STAGES": 2}


def interpret(tmp_path, source, name, profile=None):
    return run_harness(
        BUNDLE / "harness.py",
        source,
        TARGET,
        CASES,
        3,
        tmp_path / name,
        240,
        {"TRITON_INTERPRET": "1"},
        profile,
    )


@pytest.mark.slow
def test_interpreter_evaluation_passes_every_case_of_the_shipped_and_widest_kernels(tmp_path):
    needs_triton()
    deep = {"level": "deep", "native_profiler": NCU, "artifacts_dir": str(tmp_path / "art")}
    widest = knobs.rewrite(SOURCE, "BLOCK_N", max(TARGET["tunables"]["BLOCK_N"]))
    for name, source in (("shipped", SOURCE), ("widest", widest)):
        evaluation = interpret(tmp_path, source, name, deep)
        assert evaluation.error is None, evaluation.error
        response = evaluation.response
        assert response["build"] == {"success": True, "diagnostics": []}
        for case in response["cases"]:
            assert case["passed"] is True, (name, case["diagnostics"])
            assert len(case["samples_us"]) == 3 and min(case["samples_us"]) > 0
            assert (
                case["metrics"]["max_abs_err"] <= case["metrics"]["atol"] + case["metrics"]["rtol"]
            )
            assert case["profile"]["duration_us"] is None
            assert "interpreter" in case["profile"]["diagnostics"][0]


@pytest.mark.slow
def test_interpreter_evaluation_rejects_a_wrong_kernel_and_a_broken_one(tmp_path):
    needs_triton()
    wrong = SOURCE.replace("/ row_sum", "/ (row_sum + 1.0)")
    assert wrong != SOURCE
    evaluation = interpret(tmp_path, wrong, "wrong")
    cases = evaluation.response["cases"]
    assert all(c["passed"] is False for c in cases)
    assert all("elements outside rtol" in c["diagnostics"][0] for c in cases)
    assert all("samples_us" not in c for c in cases)  # no benchmark after a failed verify
    broken = SOURCE.replace("import triton\n", "import triton\nraise ImportError('no such op')\n")
    evaluation = interpret(tmp_path, broken, "broken")
    build = evaluation.response["build"]
    assert build["success"] is False
    assert build["diagnostics"] == ["kernel.py: ImportError('no such op')"]
