"""`git kb optimize` as a drop-in for the TLX kernel optimization agent.

The TLX agent's own command line (the skill's: ``--kernel --harness --cases --target
--output-dir --provider mock --max-rounds 5 --candidates-per-round 2 --profile``) on
bundles of our own, one of them a kernel of constants with no function to break (the
shape of TLX's test fixture). The expected keys are TLX's dataclasses as its source
(scxiao/triton-tlx @ ad22ede, ``kernel_optimization/models.py``) defines them.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from helpers import git, kb

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

# TLX's KernelOptimizationResult, PerformanceSummary, CaseEvaluation, VerificationResult,
# TimingSamples, ExperimentSummary and AutoCommitResult, field by field.
RESULT = {
    "success": bool, "best_kernel": str, "baseline": dict, "final": dict,
    "experiments": list, "artifacts_dir": str, "stopping_reason": str, "auto_commit": None,
}  # fmt: skip
PERFORMANCE = {"cases": list, "aggregate_speedup": float}
CASE = {"case_id": str, "verification": dict, "timing": None, "profile": dict}
VERIFICATION = {"passed": bool, "diagnostics": str, "metrics": dict}
TIMING = {"samples_us": list, "warmup_count": int, "cache_policy": str}
EXPERIMENT = {
    "experiment_id": str, "round_index": int, "parent_id": None, "status": str,
    "source_path": str, "performance": None, "diagnostics": str, "mutation_summary": str,
    "hypothesis": str, "evidence": str, "expected_effect": str, "risk": str,
    "profile_path": None,
}  # fmt: skip
AUTO_COMMIT = {
    "requested": bool, "success": bool, "vcs": None, "repo_root": None, "target_path": None,
    "target_relpath": None, "base_revision": None, "commit_revision": None, "subject": None,
    "attribution": str, "dirty_target_at_start": bool, "diagnostics": str,
}  # fmt: skip
STATUSES = {"baseline", "promoted", "rejected", "failed"}

# A kernel of constants, read by a harness that never runs it (TLX's fixture's shape).
CONSTANTS_HARNESS = """
import json, os, re


def build(kernel_source, target):
    record = os.environ.get("RECORD")
    if record:
        with open(record, "a") as fh:
            fh.write(json.dumps({"build_target": target}) + "\\n")
    print("a compiler log line")
    latency = re.search(r"LATENCY_US\\s*=\\s*([0-9.]+)", kernel_source)
    correct = re.search(r"CORRECT\\s*=\\s*(True|False)", kernel_source)
    if latency is None or correct is None:
        return {"success": False, "diagnostics": "no LATENCY_US / CORRECT constants"}
    return {"success": True, "artifact": {"latency": float(latency.group(1)),
                                          "correct": correct.group(1) == "True"}}


def verify(artifact, case):
    ok = artifact["correct"]
    return {"passed": ok, "diagnostics": "" if ok else "wrong on purpose"}


def benchmark(artifact, case, repetitions):
    scale = float(case["parameters"].get("scale", 1.0))
    return {"samples_us": [artifact["latency"] * scale] * repetitions,
            "warmup_count": 2, "cache_policy": "warm"}


def profile(artifact, case, request):
    record = os.environ.get("RECORD")
    if record:
        folder = request.get("artifacts_dir")
        with open(record, "a") as fh:
            fh.write(json.dumps({"request": request,
                                 "folder_exists": bool(folder) and os.path.isdir(folder)}) + "\\n")
    return {"bottleneck": "synthetic"}
"""

CONSTANTS_KERNEL = "LATENCY_US = 10.0\nCORRECT = True\n"
CASES = [
    {"case_id": "small", "parameters": {"scale": 1.0}, "weight": 1.0},
    {"case_id": "large", "parameters": {"scale": 4.0}, "weight": 2.0, "protected": False},
]


def shape_problems(value, expected: dict, where: str) -> list[str]:
    """Keys missing or of another type than TLX writes (None: any type, null allowed)."""
    problems = []
    for key, kind in expected.items():
        if key not in value:
            problems.append(f"{where}.{key} missing")
        elif kind is float and isinstance(value[key], int | float) and value[key] is not True:
            continue
        elif kind is not None and not isinstance(value[key], kind):
            problems.append(f"{where}.{key} is {type(value[key]).__name__}")
    return problems


def performance_problems(performance: dict, where: str) -> list[str]:
    problems = shape_problems(performance, PERFORMANCE, where)
    for index, case in enumerate(performance.get("cases", [])):
        here = f"{where}.cases[{index}]"
        problems += shape_problems(case, CASE, here)
        problems += shape_problems(case["verification"], VERIFICATION, f"{here}.verification")
        if case["timing"] is not None:
            problems += shape_problems(case["timing"], TIMING, f"{here}.timing")
        elif case["verification"]["passed"]:
            problems.append(f"{here}: passed without timing")
    return problems


def tlx_problems(document: dict) -> list[str]:
    """Every way ``document`` differs from the shape of TLX's result.json."""
    problems = shape_problems(document, RESULT, "result")
    problems += performance_problems(document["baseline"], "baseline")
    problems += performance_problems(document["final"], "final")
    for index, experiment in enumerate(document["experiments"]):
        where = f"experiments[{index}]"
        problems += shape_problems(experiment, EXPERIMENT, where)
        if experiment["status"] not in STATUSES:
            problems.append(f"{where}.status {experiment['status']!r}")
        if experiment["performance"] is not None:
            problems += performance_problems(experiment["performance"], f"{where}.performance")
    if document["auto_commit"] is not None:
        problems += shape_problems(document["auto_commit"], AUTO_COMMIT, "auto_commit")
    return problems


def kernel_repo(tmp_path: Path, source: str = CONSTANTS_KERNEL) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("config", "user.email", "dev@example.com", cwd=repo)
    git("config", "user.name", "Dev", cwd=repo)
    (repo / "kernel.py").write_text(source)
    git("add", "kernel.py", cwd=repo)
    git("commit", "-qm", "start", cwd=repo)
    return repo


def tlx_bundle(folder: Path, target: dict | None = None) -> Path:
    """harness.py, cases.json, target.json as a TLX target folder holds them (no budget)."""
    folder.mkdir(parents=True)
    (folder / "harness.py").write_text(CONSTANTS_HARNESS)
    (folder / "cases.json").write_text(json.dumps(CASES))
    (folder / "target.json").write_text(
        json.dumps(target or {"backend": "cpu", "architecture": "host"})
    )
    return folder


def skill_command(kernel: Path, bundle: Path, output: str, *extra: str) -> list[str]:
    """The TLX skill's command line, flag for flag."""
    return [
        "optimize",
        "--kernel", str(kernel),
        "--harness", str(bundle / "harness.py"),
        "--cases", str(bundle / "cases.json"),
        "--target", str(bundle / "target.json"),
        "--output-dir", output,
        "--provider", "mock",
        "--max-rounds", "5",
        "--candidates-per-round", "2",
        "--max-cv", "0.10",
        "--benchmark-repetitions", "3",
        "--profile",
        *extra,
    ]  # fmt: skip


def lines(stderr: bytes) -> list[str]:
    return stderr.decode().splitlines()


def test_the_tlx_skill_command_line_with_the_mock_provider(tmp_path):
    """A constants-only kernel, TLX's mock provider: every try is an echo of the current
    source, failed as a duplicate; no winner, exit 2, TLX's files, keys and lines."""
    repo = kernel_repo(tmp_path)
    bundle = tlx_bundle(tmp_path / "bundle")
    done = kb(*skill_command(repo / "kernel.py", bundle, "run-out"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    document = json.loads(done.stdout)
    assert tlx_problems(document) == []
    out = tmp_path / "run-out"
    assert document["artifacts_dir"] == str(out.resolve())  # a relative --output-dir, absolute
    assert json.loads((out / "result.json").read_text()) == document
    assert json.loads((out / "experiments.json").read_text()) == document["experiments"]
    ids = [e["experiment_id"] for e in document["experiments"]]
    assert ids == ["baseline"] + [f"r{r:03d}-c{c:03d}" for r in range(1, 6) for c in range(2)]
    assert [e["status"] for e in document["experiments"]] == ["baseline"] + ["failed"] * 10
    assert all("duplicate" in e["diagnostics"] for e in document["experiments"][1:])
    assert all(e["parent_id"] == "baseline" for e in document["experiments"][1:])
    assert document["experiments"][1]["mutation_summary"] == "mock-echo"
    assert document["success"] is False and document["stopping_reason"] == "round_budget_exhausted"
    assert document["best_kernel"] == CONSTANTS_KERNEL and document["auto_commit"] is None
    assert document["final"] == document["baseline"]
    assert document["baseline"]["aggregate_speedup"] == 1.0
    small = document["baseline"]["cases"][0]
    assert small["timing"] == {"samples_us": [10.0] * 3, "warmup_count": 2, "cache_policy": "warm"}
    assert small["verification"] == {"passed": True, "diagnostics": "", "metrics": {}}
    assert small["profile"] == {"bottleneck": "synthetic"}
    for name in ("best_kernel.py", "baseline_profile.json", "best_profile.json"):
        assert (out / name).is_file(), name
    assert not (out / "auto_commit.json").exists()
    for exp in ("baseline", "final", "r001-c000", "r005-c001"):
        assert (out / "experiments" / exp).is_dir(), exp
    for exp in ("baseline", "r001-c000"):
        saved = json.loads((out / "experiments" / exp / "result.json").read_text())
        assert saved == document["experiments"][ids.index(exp)]
    assert (out / "experiments" / "r001-c000" / "kernel.py").read_text() == CONSTANTS_KERNEL
    # the validation could not break a kernel with no function, and ran it anyway
    assert document["validation"]["broken_candidate"] == "raises on import"
    said = lines(done.stderr)
    assert any(line.startswith("[tlx-agent] baseline status=baseline aggregate_speedup=1.0000x "
                               "case=small,correct,median=10.000us,p95=10.000us,cv=0.0000")
               for line in said)  # fmt: skip
    assert "[tlx-agent] r001-c000 status=generating" in said
    assert "[tlx-agent] r001-c000 change='mock-echo'" in said
    assert any(line.startswith("[tlx-agent] r001-c000 status=failed") for line in said)
    assert any(line.startswith("[tlx-agent] final status=baseline") for line in said)
    assert git("log", "--format=%s", cwd=repo).stdout.strip() == "start"


def test_a_promoted_winner_is_committed_with_tlx_fields(tmp_path):
    """TLX's defaults promote a 1.015x candidate; the commit subject falls back to TLX's."""
    repo = kernel_repo(tmp_path)
    bundle = tlx_bundle(tmp_path / "bundle")
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    (candidates / "01.py").write_text(f"LATENCY_US = {10.0 / 1.015!r}\nCORRECT = True\n")
    done = kb(
        "optimize", "--kernel", str(repo / "kernel.py"), "--harness", str(bundle / "harness.py"),
        "--cases", str(bundle / "cases.json"), "--target", str(bundle / "target.json"),
        "--output-dir", str(tmp_path / "out"), "--provider", "replay",
        "--replay-dir", str(candidates),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    document = json.loads(done.stdout)
    assert tlx_problems(document) == []
    assert document["budget"]["min_speedup"] == 1.01 and document["budget"]["max_rounds"] == 5
    assert [e["status"] for e in document["experiments"]] == ["baseline", "promoted"]
    assert document["final"]["aggregate_speedup"] == pytest.approx(1.015)
    auto = document["auto_commit"]
    assert json.loads((tmp_path / "out" / "auto_commit.json").read_text()) == auto
    head = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    assert auto["success"] and auto["commit_revision"] == head and auto["vcs"] == "git"
    assert auto["subject"] == "Optimize kernel.py with TLX agent"
    assert auto["attribution"] == "TLX agent authored" and auto["target_relpath"] == "kernel.py"
    assert auto["repo_root"] == str(repo) and auto["dirty_target_at_start"] is False
    assert git("log", "-1", "--format=%s", cwd=repo).stdout.strip() == auto["subject"]
    event = [line for line in lines(done.stderr) if line.startswith("[tlx-agent] commit ")]
    assert event == [
        f"[tlx-agent] commit status=committed vcs=git id={head} repo={repo} file=kernel.py "
        'subject="Optimize kernel.py with TLX agent" attribution="TLX agent authored"'
    ]


def test_a_kernel_in_no_repository_exits_3_before_the_run(tmp_path):
    kernel = tmp_path / "loose" / "kernel.py"
    kernel.parent.mkdir()
    kernel.write_text(CONSTANTS_KERNEL)
    bundle = tlx_bundle(tmp_path / "bundle")
    done = kb(*skill_command(kernel, bundle, str(tmp_path / "out")))
    assert done.returncode == 3
    auto = json.loads(done.stdout)
    assert shape_problems(auto, AUTO_COMMIT, "auto_commit") == []
    assert auto["requested"] and not auto["success"] and auto["vcs"] is None
    assert auto["subject"] == "Optimize kernel.py with TLX agent" and auto["diagnostics"]
    assert any(line.startswith("[tlx-agent] commit status=failed vcs=unknown ")
               for line in lines(done.stderr))  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_the_harness_gets_tlx_inputs(tmp_path):
    """build() gets TLX's target defaults; a profile request has granularity and a created
    folder per case; on nvidia native_profiler is sent as ncu."""
    record = tmp_path / "record.jsonl"
    target = {"backend": "nvidia", "architecture": "hopper", "environment": {"RECORD": str(record)}}
    bundle = tlx_bundle(tmp_path / "bundle", target)
    (bundle / "kernel.py").write_text(CONSTANTS_KERNEL)
    done = kb(
        "optimize", str(bundle), "-o", str(tmp_path / "out"), "--provider", "mock",
        "--max-rounds", "1", "--candidates-per-round", "1", "--diagnostic-proton-intra-kernel",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    build_target = next(s["build_target"] for s in seen if "build_target" in s)
    assert build_target["device"] is None and build_target["optimization_guidance"] == ""
    requests = [s for s in seen if "request" in s]
    assert all(s["folder_exists"] for s in requests)
    baseline = next(s["request"] for s in requests if s["request"]["experiment_id"] == "baseline"
                    and not s["request"]["diagnostic_only"])  # fmt: skip
    out = tmp_path / "out"
    assert baseline["tools"] == ["proton_launch", "ncu"] and baseline["granularity"] is None
    assert baseline["level"] == "deep" and baseline["reason"] == "baseline"
    folders = {s["request"]["artifacts_dir"] for s in requests if s["request"]["experiment_id"]
               == "baseline" and not s["request"]["diagnostic_only"]}  # fmt: skip
    assert folders == {
        str(out / "experiments" / "baseline" / "profile_artifacts" / case)
        for case in ("small", "large")
    }
    diagnostic = next(s["request"] for s in requests if s["request"]["diagnostic_only"])
    assert diagnostic["tools"] == ["proton_intra_kernel"] and diagnostic["granularity"] == "warp"
    assert "diagnostic_profile_artifacts" in diagnostic["artifacts_dir"]
    document = json.loads(done.stdout)
    profile = document["baseline"]["cases"][0]["profile"]
    assert profile["diagnostic_proton_intra_kernel"] == {"bottleneck": "synthetic"}


def test_budget_file_overrides_flags_and_a_bundle_budget_does_not(tmp_path):
    from gitkb.optimize.bundle import Budget

    file = {"max_rounds": 7, "min_speedup": 1.05, "unknown": "ignored"}
    budget, sources = Budget.effective({"max_rounds": 2, "max_cv": 0.2}, file, file_given=True)
    assert (budget.max_rounds, budget.min_speedup, budget.max_cv) == (7, 1.05, 0.2)
    assert sources["max_rounds"] == "--budget" and sources["max_cv"] == "flag"
    assert sources["candidates_per_round"] == "default" and budget.candidates_per_round == 2
    budget, sources = Budget.effective({"max_rounds": 2}, file, file_given=False)
    assert budget.max_rounds == 2 and sources["max_rounds"] == "flag"
    assert budget.min_speedup == 1.05 and sources["min_speedup"] == "budget.json"


def test_the_kernel_only_form_finds_the_bundle_by_convention(tmp_path):
    roots = tmp_path / "harnesses"
    tlx_bundle(roots / "host" / "targets" / "kernel")
    repo = kernel_repo(tmp_path)
    done = kb(
        "optimize", "--kernel", str(repo / "kernel.py"), "--arch", "host",
        "--bundle-root", str(roots), "--output-dir", str(tmp_path / "out"),
        "--provider", "mock", "--max-rounds", "1", "--no-commit-winner",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    document = json.loads(done.stdout)
    assert document["bundle"]["source"] == str(roots / "host" / "targets" / "kernel")
    missing = kb("optimize", "--kernel", str(tmp_path / "nothing_here.py"), "--arch", "host",
                 "--bundle-root", str(roots))  # fmt: skip
    assert missing.returncode == 1 and b"no bundle for nothing_here.py" in missing.stderr


def test_codex_gets_an_absolute_workspace_from_a_relative_output(tmp_path):
    fake = tmp_path / "fake-codex"
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\njson.dump(sys.argv[1:], open('argv.json', 'w'))\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    bundle = tlx_bundle(tmp_path / "bundle")
    (bundle / "kernel.py").write_text(CONSTANTS_KERNEL)
    done = kb(
        "optimize", str(bundle), "-o", "rel-out", "--provider", "codex", "--agent-bin", str(fake),
        "--max-rounds", "1", "--candidates-per-round", "1", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    workspace = tmp_path / "rel-out" / "workspaces" / "r001-c000"
    argv = json.loads((workspace / "argv.json").read_text())
    assert argv[argv.index("--cd") + 1] == str(workspace.resolve())


WRITES_THE_KERNEL = """import os
LATENCY_US = 1.0
CORRECT = False
open(os.environ["USER_KERNEL"], "w").write("vandalized\\n")
"""


def test_a_candidate_that_writes_the_users_kernel_is_undone_and_stops_the_run(tmp_path):
    repo = kernel_repo(tmp_path)
    original = (repo / "kernel.py").read_bytes()
    target = {"backend": "cpu", "environment": {"USER_KERNEL": str(repo / "kernel.py")}}
    bundle = tlx_bundle(tmp_path / "bundle", target)
    # this harness runs what it builds, so the candidate's module code executes
    runs_it = "    exec(kernel_source, {}) if 'USER_KERNEL' in kernel_source else None"
    (bundle / "harness.py").write_text(
        CONSTANTS_HARNESS.replace('    print("a compiler log line")', runs_it)
    )
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    (candidates / "01.py").write_text(WRITES_THE_KERNEL)
    done = kb(
        "optimize", "--kernel", str(repo / "kernel.py"), str(bundle), "-o", str(tmp_path / "out"),
        "--provider", "replay", "--replay-dir", str(candidates),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr.decode()[-2000:]
    assert (repo / "kernel.py").read_bytes() == original
    assert done.stdout, done.stderr.decode()[-3000:]
    document = json.loads(done.stdout)
    assert document["stopping_reason"] == "kernel_changed" and document["auto_commit"] is None
    assert "the kernel file was written during r001-c000: it is restored" in document["error"]
    assert git("status", "--porcelain", cwd=repo).stdout == ""


def test_harness_output_is_capped_with_a_notice(tmp_path):
    from gitkb.optimize import worker

    harness = tmp_path / "harness.py"
    harness.write_text(
        "import sys\n"
        "def build(s, t):\n"
        "    sys.stdout.write('x' * (3 << 20)); sys.stdout.write('THE END\\n')\n"
        "    return 1\n"
        "def verify(a, c): return True\n"
        "def benchmark(a, c, r): return [1.0]\n"
    )
    ev = worker.run_harness(
        harness, "X = 1\n", {"backend": "cpu"}, CASES[:1], 1, tmp_path / "w", 20
    )
    assert ev.response["cases"][0]["passed"]
    log = ev.log.read_bytes()
    assert len(log) < worker.LOG_HEAD_BYTES + worker.LOG_TAIL_BYTES + 200
    assert b"harness output truncated:" in log and log.rstrip().endswith(b"THE END")
    assert os.path.getsize(ev.log) == len(log)


def test_a_dirty_target_commits_only_the_winners_change_revalidated(tmp_path):
    repo = kernel_repo(tmp_path, CONSTANTS_KERNEL + "# end\n")
    (repo / "kernel.py").write_text(CONSTANTS_KERNEL + "# end, edited by the user\n")
    bundle = tlx_bundle(tmp_path / "bundle")
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    winner = "LATENCY_US = 9.0\nCORRECT = True\n# end, edited by the user\n"
    (candidates / "01.py").write_text(winner)
    done = kb(
        "optimize", "--kernel", str(repo / "kernel.py"), str(bundle), "-o", str(tmp_path / "out"),
        "--provider", "replay", "--replay-dir", str(candidates),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    auto = json.loads(done.stdout)["auto_commit"]
    assert auto["success"] and auto["dirty_target_at_start"] and auto["reverified"]
    committed = git("show", "HEAD:kernel.py", cwd=repo).stdout
    assert committed == "LATENCY_US = 9.0\nCORRECT = True\n# end\n"
    assert (repo / "kernel.py").read_text() == winner
    revalidation = json.loads((tmp_path / "out" / "commit_revalidation.json").read_text())
    assert performance_problems(revalidation, "commit_revalidation") == []
