"""The harness worker: a real subprocess per evaluation, both return shapes, and cleanup
of hanging, crashing and forking harnesses within the timeout."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gitkb.optimize.worker import KILL_GRACE_S, run_harness

CASES = [{"case_id": "a", "parameters": {}, "weight": 1.0, "protected": True}]


def _run(tmp_path: Path, harness: str, timeout: float = 10.0, env=None, profile=None, cases=CASES):
    path = tmp_path / "harness.py"
    path.write_text(harness)
    return run_harness(
        path, "X = 1\n", {"backend": "cpu"}, cases, 3, tmp_path / "work", timeout, env, profile
    )


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # reaped, or a zombie nobody is left to reap


def test_plain_return_shapes(tmp_path):
    ev = _run(
        tmp_path,
        """
def build(source, target):
    ns = {}
    exec(source, ns)
    return ns
def verify(artifact, case):
    return artifact["X"] == 1
def benchmark(artifact, case, repetitions):
    return [5.0] * repetitions
""",
    )
    assert ev.error is None
    case = ev.response["cases"][0]
    assert case["passed"] and case["samples_us"] == [5.0, 5.0, 5.0]


def test_dict_return_shapes_and_environment(tmp_path):
    ev = _run(
        tmp_path,
        """
import os
def build(source, target):
    return {"success": True, "artifact": 7, "diagnostics": ["built"]}
def verify(artifact, case):
    ok = artifact == 7 and os.environ.get("GITKB_T") == "on"
    return {"passed": ok, "diagnostics": ["checked"], "metrics": {"max_abs_err": 0.5}}
def benchmark(artifact, case, repetitions):
    return {"samples_us": [1.0, 2.0], "warmup_count": 4, "cache_policy": "cold"}
""",
        env={"GITKB_T": "on"},
    )
    case = ev.response["cases"][0]
    assert ev.response["build"] == {"success": True, "diagnostics": ["built"]}
    assert case["passed"] and case["metrics"] == {"max_abs_err": 0.5}
    assert case["warmup_count"] == 4 and case["cache_policy"] == "cold"


@pytest.mark.slow
def test_failed_build_and_verify_skip_benchmark(tmp_path):
    ev = _run(
        tmp_path,
        """
def build(source, target):
    return {"success": False, "artifact": None, "diagnostics": "no compiler"}
def verify(a, c):
    raise AssertionError("must not run")
def benchmark(a, c, r):
    raise AssertionError("must not run")
""",
    )
    assert ev.response["build"] == {"success": False, "diagnostics": ["no compiler"]}
    ev = _run(
        tmp_path,
        """
def build(source, target):
    return 1
def verify(a, c):
    return {"passed": False, "diagnostics": ["off by one"]}
def benchmark(a, c, r):
    raise AssertionError("benchmark after a failed verify")
""",
    )
    case = ev.response["cases"][0]
    assert not case["passed"] and case["diagnostics"] == ["off by one"]


def test_bad_samples_fail_the_case(tmp_path):
    ev = _run(
        tmp_path,
        """
def build(s, t): return 1
def verify(a, c): return True
def benchmark(a, c, r): return [1.0, float("nan")]
""",
    )
    case = ev.response["cases"][0]
    assert not case["passed"] and "not finite" in case["diagnostics"][0]


@pytest.mark.slow
def test_profile_two_and_three_argument_forms(tmp_path):
    request = {"level": "deep", "artifacts_dir": str(tmp_path / "pa"), "experiment_id": "x"}
    legacy = _run(
        tmp_path,
        """
def build(s, t): return 1
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
def profile(artifact, case):
    return {"duration_us": 3.0}
""",
        profile=request,
    )
    assert legacy.response["cases"][0]["profile"] == {"duration_us": 3.0}
    modern = _run(
        tmp_path,
        """
def build(s, t): return 1
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
def profile(artifact, case, request):
    return {"level": request["level"]}
""",
        profile=request,
    )
    assert modern.response["cases"][0]["profile"] == {"level": "deep"}
    broken = _run(
        tmp_path,
        """
def build(s, t): return 1
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
def profile(artifact, case, request):
    raise RuntimeError("counter unavailable")
""",
        profile=request,
    )
    assert "counter unavailable" in broken.response["cases"][0]["profile"]["error"]
    big = _run(
        tmp_path,
        """
def build(s, t): return 1
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
def profile(artifact, case, request):
    return {"blob": "x" * (2 << 20)}
""",
        profile=request,
    )
    spilled = big.response["cases"][0]["profile"]  # TLX's pointer, in the case's own folder
    assert spilled["truncated"] is True and spilled["size_bytes"] > (1 << 20)
    assert spilled["artifact"] == str(tmp_path / "pa" / "a" / "raw_profile.json")
    assert Path(spilled["artifact"]).stat().st_size > (1 << 20)


@pytest.mark.slow
def test_hanging_harness_is_killed_within_the_timeout(tmp_path):
    start = time.monotonic()
    ev = _run(
        tmp_path,
        """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL stops it
def build(s, t):
    time.sleep(600)
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
""",
        timeout=0.5,
    )
    elapsed = time.monotonic() - start
    assert ev.timed_out and ev.response is None and "timed out" in ev.error
    assert elapsed < 0.5 + KILL_GRACE_S + 1.5


def test_crashing_harness_reports_without_a_response(tmp_path):
    ev = _run(
        tmp_path,
        """
import os
def build(s, t):
    print("about to crash")
    os._exit(3)
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
""",
    )
    assert ev.response is None and ev.returncode == 3
    assert "status 3" in ev.error and "about to crash" in ev.error


def test_forked_child_that_keeps_running_is_killed(tmp_path):
    pid_file = tmp_path / "child.pid"
    ev = _run(
        tmp_path,
        f"""
import subprocess, sys
def build(s, t):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open({str(pid_file)!r}, "w").write(str(child.pid))
    return 1
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
""",
    )
    assert ev.error is None
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 2
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(pid)


@pytest.mark.slow
def test_forked_child_of_a_hanging_harness_is_killed(tmp_path):
    pid_file = tmp_path / "child.pid"
    ev = _run(
        tmp_path,
        f"""
import os, subprocess, sys, time
def build(s, t):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open({str(pid_file)!r}, "w").write(str(child.pid))
    time.sleep(120)
def verify(a, c): return True
def benchmark(a, c, r): return [1.0]
""",
        timeout=1.0,
    )
    assert ev.timed_out
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 2
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(pid)


def test_verdicts_are_strict_and_name_what_they_got(tmp_path):
    ev = _run(
        tmp_path,
        """
VERDICTS = {"a": "FAIL", "b": {"passed": "false"}, "c": 1, "d": {"passed": True}, "e": True,
            "f": {"passed": None}}
def build(s, t): return 1
def verify(a, case): return VERDICTS[case["case_id"]]
def benchmark(a, c, r): return [1.0]
""",
        cases=[{"case_id": c, "parameters": {}} for c in "abcdef"],
    )
    cases = {c["case_id"]: c for c in ev.response["cases"]}
    assert cases["d"]["passed"] is True and cases["e"]["passed"] is True
    assert "verify returned 'FAIL' (str)" in cases["a"]["diagnostics"][0]
    assert "verify returned passed='false' (str)" in cases["b"]["diagnostics"][0]
    assert "verify returned 1 (int)" in cases["c"]["diagnostics"][0]
    assert "passed=None (NoneType)" in cases["f"]["diagnostics"][0]
    for case_id in "abcf":
        assert cases[case_id]["passed"] is False and "samples_us" not in cases[case_id]


def test_build_success_must_be_the_boolean_true(tmp_path):
    ev = _run(
        tmp_path,
        """
def build(s, t): return {"success": "yes", "artifact": 1, "diagnostics": "compiled"}
def verify(a, c): raise AssertionError("must not run")
def benchmark(a, c, r): raise AssertionError("must not run")
""",
    )
    assert ev.response["build"]["success"] is False
    assert ev.response["build"]["diagnostics"][0].startswith("build returned success='yes' (str)")


def test_a_forged_response_is_checked_again(tmp_path):
    """The parent does not take the child's word: a case that claims to pass without valid
    samples, or with a verdict that is not true, fails."""
    from gitkb.optimize.worker import checked

    response = {
        "build": {"success": "true", "diagnostics": []},
        "cases": [
            {"case_id": "a", "passed": True, "samples_us": [1.0, float("nan")]},
            {"case_id": "b", "passed": "yes", "samples_us": [1.0]},
            {"case_id": "c", "passed": True, "samples_us": [2.0]},
        ],
    }
    out = checked(response)
    assert out["build"]["success"] is False
    assert [c["passed"] for c in out["cases"]] == [False, False, True]
    assert "no valid timing samples" in out["cases"][0]["diagnostics"][0]
    assert checked({"cases": []}) is None and checked("garbage") is None
