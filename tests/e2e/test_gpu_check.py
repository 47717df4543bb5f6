"""bench/gpu_check.sh and its Python half, bench/gpu_check.py, on a machine without a GPU.

The dry run installs gitkb into a fresh venv and rehearses every step of the real
check (optimize with a winner commit, mine, validate, warm start, the table) on a
CPU bundle; where this interpreter has torch and triton it also rehearses the
Triton bundle itself in Triton's interpreter. The real run stops at once, plainly,
when there is no GPU. The helper's verdicts read the optimizer's JSON defensively.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from gitkb.gates.registry import GATE_NAMES

SCRIPT = ROOT / "bench" / "gpu_check.sh"
HELPER = ROOT / "bench" / "gpu_check.py"
BUNDLE = ROOT / "targets" / "nvidia" / "examples" / "triton_softmax"

sys.path.insert(0, str(ROOT / "bench"))
import gpu_check  # noqa: E402


def bash() -> str:
    found = shutil.which("bash")
    if found is None:
        pytest.skip("bash is not installed")
    return found


def script_env() -> dict:
    """The test's environment, with the machine's own pip settings and cache (the isolated
    HOME of these tests would hide them, and pip would fetch everything anew)."""
    env = dict(os.environ)
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    config = home / ".config" / "pip" / "pip.conf"
    if config.is_file() and "PIP_CONFIG_FILE" not in env:
        env["PIP_CONFIG_FILE"] = str(config)
    env.setdefault("PIP_CACHE_DIR", str(home / ".cache" / "pip"))
    env.pop("TRITON_INTERPRET", None)
    return env


def run_script(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [bash(), str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=script_env(),
        timeout=timeout,
    )


STEPS = (
    "tools",
    "workdir",
    "bundle files",
    "venv and install",
    "command line",
    "toolchain",
    "bundle as gitkb sees it",
    "compile for sm_90",
    "device",
    "rehearsal bundle",
    "optimize (run 1",
    "mine the trace into a fresh store",
    "validate the store",
    "optimize (run 2, warm start",
    "table",
)


def check_rehearsal(done, work: Path, cases: list[str]) -> None:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for number, step in enumerate(STEPS, 1):
        assert f"== [{number}] {step}" in done.stdout, step
    assert "gpu_check: all steps passed" in done.stdout
    # the Triton bundle itself was checked, even where a CPU example rehearses the run
    assert "bundle triton_softmax: 3 cases, backend nvidia" in done.stdout
    assert "hardware sm_90 -> nvidia/hopper; native profiler ncu" in done.stdout
    assert "harness imports without torch" in done.stdout
    assert "build without a GPU refuses: " in done.stdout
    table = done.stdout[done.stdout.index("REHEARSAL (dry run)") :]
    for label in ("device", "profiler", "run 1 (cold)", "run 2 (warm)", "records admitted"):
        assert f"   {label}" in table
    # validate --full runs every registered gate (relations and the index cache among them)
    verdicts = json.loads((work / "validate.json").read_text())["gates"]
    assert {gate["status"] for gate in verdicts} == {"PASS"}
    assert [gate["gate"] for gate in verdicts] == list(GATE_NAMES)
    assert f"{len(verdicts)} PASS" in table
    for case in cases:
        assert sum(line.split()[0] == case for line in table.splitlines()[1:] if line) == 2
    result = json.loads((work / "run-1" / "result.json").read_text())
    commit = result["auto_commit"]["commit_revision"]
    head = subprocess.run(
        ["git", "-C", str(work / "run-1-repo"), "log", "-1", "--format=%H%n%B"],
        capture_output=True,
        text=True,
    ).stdout
    assert head.startswith(commit) and "TLX-Agent: authored" in head
    second = json.loads((work / "run-2" / "result.json").read_text())
    assert second["warm_start"]["adopted"]["record"] in table
    assert json.loads((work / "mine.json").read_text())["counts"]["insert"] >= 1


@pytest.mark.slow
def test_dry_run_installs_gitkb_and_rehearses_every_step(tmp_path):
    work = tmp_path / "work"
    done = run_script("--dry-run", "--workdir", str(work))
    check_rehearsal(done, work, ["square-192", "tall-256x128", "odd-100"])
    assert "pip install " in done.stdout and (work / "venv" / "bin" / "git-kb").exists()
    pip_log = (work / "pip.log").read_text()
    assert "torch" not in pip_log.split("Successfully installed")[-1]  # a dry run: no torch
    assert "CPU blocked_matmul example stands in" in done.stdout  # the new venv has no torch


@pytest.mark.slow
def test_dry_run_rehearses_the_triton_bundle_in_the_interpreter(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not (Path(sys.prefix) / "bin" / "git-kb").exists():
        pytest.skip("this interpreter's environment has no git-kb entry point")
    work = tmp_path / "work"
    done = run_script("--dry-run", "--workdir", str(work), "--venv", sys.prefix, "--no-install")
    check_rehearsal(done, work, ["fp16-8192x2048", "bf16-2048x8192", "fp32-4096x3000-large"])
    assert "sm_90 cubins" in done.stdout
    assert "the Triton bundle in Triton's CPU interpreter" in done.stdout
    assert "profiler          none: Triton interpreter" in done.stdout
    assert not (work / "pip.log").exists()


@pytest.mark.slow
def test_real_run_without_a_gpu_stops_plainly_before_installing(tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi is installed here")
    work = tmp_path / "work"
    done = run_script("--workdir", str(work), timeout=60)
    assert done.returncode == 3, done.stderr
    assert "gpu_check: NO GPU: nvidia-smi is not on PATH." in done.stderr
    assert "--dry-run checks its steps without one" in done.stderr
    assert not work.exists()


@pytest.mark.slow
def test_bad_usage_exits_2_and_help_exits_0():
    done = run_script("--frobnicate", timeout=60)
    assert done.returncode == 2 and "unknown argument '--frobnicate'" in done.stderr
    shown = run_script("--help", timeout=60)
    assert shown.returncode == 0 and "--dry-run" in shown.stdout and "Exit status" in shown.stdout
    done = run_script("--dry-run", "--no-install", timeout=60)
    assert done.returncode == 1
    assert "FAILED at step 'venv and install': --no-install needs --venv" in done.stderr


# ------------------------------------------------------------------ the helper


def helper(capsys, *argv: str) -> tuple[int, str, str]:
    code = gpu_check.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, document) -> str:
    path.write_text(json.dumps(document))
    return str(path)


def test_expect_names_what_each_step_did_not_do(tmp_path, capsys):
    no_winner = write(tmp_path / "a.json", {"winner": None, "stopping_reason": "no_candidates"})
    code, _, err = helper(capsys, "expect", "optimize", no_winner)
    assert code == 1 and err.startswith("no winner (stopping reason no_candidates)")
    uncommitted = write(
        tmp_path / "b.json",
        {
            "winner": "r001-c001",
            "auto_commit": {"success": False, "diagnostics": "target is dirty"},
        },
    )
    code, _, err = helper(capsys, "expect", "optimize", uncommitted)
    assert code == 1 and "r001-c001 not committed: target is dirty" in err
    code, _, err = helper(capsys, "expect", "mine", write(tmp_path / "c.json", {"counts": {}}))
    assert code == 1 and err.startswith("no record admitted")
    failing = {
        "gates": [
            {"gate": "schema", "status": "PASS"},
            {"gate": "verbatim", "status": "FAIL", "findings": [{"record": "x", "what": "y"}]},
        ],
        "failed": 1,
    }
    code, _, err = helper(capsys, "expect", "validate", write(tmp_path / "d.json", failing))
    assert code == 1 and err.startswith("gates failed: verbatim (first finding: {")
    unadopted = {
        "warm_start": {
            "read_reason": "read",
            "offered": [{"id": "r"}],
            "candidates": [{"record": "r", "outcome": "failed"}],
            "adopted": None,
        }
    }
    code, _, err = helper(capsys, "expect", "warm-start", write(tmp_path / "e.json", unadopted))
    assert code == 1 and "no warm-start candidate was adopted (r: failed)" in err
    code, _, err = helper(capsys, "expect", "warm-start", write(tmp_path / "f.json", {}))
    assert code == 1 and "no warm_start block" in err
    code, _, err = helper(capsys, "expect", "mine", str(tmp_path / "missing.json"))
    assert code == 1 and "was not written" in err


def test_table_reads_sparse_results_without_failing(tmp_path, capsys):
    for name in ("run-1", "run-2"):
        (tmp_path / name).mkdir()
        write(tmp_path / name / "result.json", {"final": {"cases": [{"case_id": "c"}]}})
    device = write(tmp_path / "device.json", {"gpu": True, "name": "GPU", "sm": "sm_80"})
    device_text = gpu_check.device_text(
        {"gpu": True, "name": "NVIDIA H200", "sm": "sm_90", "torch": "2.9", "cuda": "12.8"}
    )
    assert device_text == "NVIDIA H200 (sm_90); torch 2.9, cuda 12.8"
    code, out, err = helper(
        capsys,
        "table",
        "--device",
        device,
        "--run-1",
        str(tmp_path / "run-1"),
        "--run-2",
        str(tmp_path / "run-2"),
        "--mine",
        write(tmp_path / "mine.json", {}),
        "--validate",
        write(tmp_path / "validate.json", {}),
    )
    assert code == 0, err
    assert "GPU (sm_80)" in out
    assert "profiler          unknown (no readable baseline_profile.json)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("c ")]
    assert rows == [["c", run, "-", "-", "-", "-", "-", "NO"] for run in ("1", "2")]


def test_profiler_line_reports_ncu_durations_or_the_reason(tmp_path):
    (tmp_path / "baseline_profile.json").write_text(
        json.dumps(
            {
                "a": {"tool": "ncu", "duration_us": 18.5},
                "b": {"tool": "ncu", "duration_us": None, "diagnostics": ["no launch"]},
            }
        )
    )
    assert gpu_check.profiler_text(tmp_path) == "ncu, 1 of 2 cases: a 18.50 us"
    (tmp_path / "baseline_profile.json").write_text(
        json.dumps({"a": {"error": "RuntimeError: boom\ntraceback"}})
    )
    assert gpu_check.profiler_text(tmp_path) == "none: RuntimeError: boom"


@pytest.mark.slow
def test_bundle_check_refuses_a_harness_that_imports_torch_eagerly(tmp_path):
    copy = tmp_path / "triton_softmax"
    shutil.copytree(BUNDLE, copy)
    harness = copy / "harness.py"
    harness.write_text("import torch\n" + harness.read_text())
    done = subprocess.run(
        [sys.executable, str(HELPER), "bundle", str(copy)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert (
        "harness.py imports torch at module level" in done.stderr
        or "harness.py does not import: ModuleNotFoundError" in done.stderr
    )


def test_bundle_check_names_a_tunable_the_kernel_does_not_assign(tmp_path, capsys):
    copy = tmp_path / "triton_softmax"
    shutil.copytree(BUNDLE, copy)
    kernel = copy / "kernel.py"
    kernel.write_text(kernel.read_text().replace("NUM_STAGES = 1\n", ""))
    code, _, err = helper(capsys, "bundle", str(copy))
    assert code == 1
    assert "tunable NUM_STAGES has no top-level assignment in the kernel" in err


def test_device_probe_exits_3_with_the_reason_where_there_is_no_gpu(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    done = subprocess.run(
        [sys.executable, str(HELPER), "device", str(BUNDLE), "--out", str(tmp_path / "d.json")],
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        pytest.skip("this machine has a usable CUDA device")
    assert done.returncode == 3, done.stderr
    device = json.loads((tmp_path / "d.json").read_text())
    assert device["gpu"] is False and device["target_architecture"] == "sm_90"
    assert done.stderr.strip() == device["reason"]
    assert device["reason"].startswith(("PyTorch is not importable", "no CUDA device"))


@pytest.mark.slow
def test_smoke_builds_and_verifies_the_protected_case():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    # The GPU's code path, in Triton's interpreter, which must be chosen before triton loads.
    code = f"import sys; sys.path.insert(0, {str(HELPER.parent)!r}); import gpu_check; "
    code += f"print(gpu_check.smoke(gpu_check.Path({str(BUNDLE)!r})))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, TRITON_INTERPRET="1"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(
        "smoke: the shipped kernel built and passed fp32-4096x3000-large (max_abs_err "
    )
