"""Hostile harnesses and candidates, end to end: every test checks what became of the user's
repository, of the bundle, and of the process table.

The harness misbehaves as the candidate's constants tell it (MODE, VERDICT, LUCKY); every
process it leaves behind carries a marker in its command line, so the process table can
be searched for survivors after the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import git, kb, live_with

from gitkb.optimize import loop, worker
from gitkb.optimize.providers import ProviderOptions

pytestmark = [
    pytest.mark.slow,  # every test here takes seconds (pyproject: markers)
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="containment and the checks read /proc"
    ),
]

HARNESS = r"""
import os, signal, subprocess, sys, time

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"


def _stubborn(**kwargs):
    argv = [sys.executable, "-c", STUBBORN, os.environ["HOSTILE_MARKER"]]
    return subprocess.Popen(argv, **kwargs)


def _misbehave(mode):
    if mode == "hang":
        time.sleep(600)
    elif mode == "hang-ignoring-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    elif mode == "crash":
        os._exit(3)
    elif mode == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "fork":
        _stubborn()
    elif mode == "setsid":
        _stubborn(start_new_session=True)
    elif mode == "double-fork":
        pid = os.fork()
        if pid == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable,
                         [sys.executable, "-c", STUBBORN, os.environ["HOSTILE_MARKER"]])
            os._exit(0)
        os.waitpid(pid, 0)
    elif mode == "garbage":
        sys.stdout.buffer.write(bytes(range(256)) * 4096)
        sys.stdout.flush()
        sys.stderr.write("{not json" * 1000)


def build(source, target):
    ns = {}
    exec(source, ns)
    _misbehave(ns.get("MODE", "ok"))
    return ns


def verify(k, case):
    if k["kernel"](3) != 3:
        return {"passed": False, "diagnostics": ["kernel(3) is not 3"]}
    return k["VERDICT"]


def benchmark(k, case, repetitions):
    cost = k["COST"]
    mark = os.environ["HOSTILE_LUCK"]
    if k.get("LUCKY") and not os.path.exists(mark):
        open(mark, "w").close()  # faster on its first measurement only
        cost = cost / 1.111
    return [cost] * repetitions
"""

KERNEL = '''"""A kernel whose constants tell the hostile harness how to behave."""

COST = 100.0
MODE = "ok"
VERDICT = True
LUCKY = False


def kernel(x):
    return x
'''

# A candidate that rewrites the harness it is judged by (the frozen copy) to pass anything.
EDIT_BUNDLE = """
import os as _os, sys as _sys
_harness = _sys.modules["harness"].__file__
_os.chmod(_os.path.dirname(_harness), 0o755)
_os.chmod(_harness, 0o644)
with open(_harness, "a") as _fh:
    _fh.write("\\n\\ndef verify(k, case):\\n    return True\\n")
"""


def variant(**changes) -> str:
    lines = KERNEL.splitlines()
    for name, value in changes.items():
        lines = [f"{name} = {value!r}" if line.startswith(f"{name} = ") else line for line in lines]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    monkeypatch.setattr(worker, "KILL_GRACE_S", 0.5)


def make_bundle(tmp_path: Path, marker: str, budget: dict | None = None) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "harness.py").write_text(HARNESS)
    (bundle / "kernel.py").write_text(KERNEL)
    (bundle / "cases.json").write_text(
        json.dumps([{"case_id": "a", "parameters": {"n": 1024}, "weight": 1.0}])
    )
    env = {"HOSTILE_MARKER": marker, "HOSTILE_LUCK": str(tmp_path / "luck-mark")}
    target = {"backend": "cpu", "architecture": "x86_64", "device": "cpu", "environment": env}
    (bundle / "target.json").write_text(json.dumps(target))
    budget = {
        "max_rounds": 1,
        "candidates_per_round": 4,
        "max_candidate_seconds": 2,
        "benchmark_repetitions": 3,
        **(budget or {}),
    }
    (bundle / "budget.json").write_text(json.dumps(budget))
    return bundle


def kernel_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "kernel.py").write_text(KERNEL)
    (repo / "notes.txt").write_text("notes\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "start", cwd=repo)
    return repo


def repo_state(repo: Path) -> dict:
    """Everything of the user's that a winner commit could disturb, as C git sees it."""

    def raw(*args):
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout

    return {
        "head": raw("rev-parse", "HEAD"),
        "status": raw("status", "--porcelain"),
        "staged": raw("diff", "--cached"),
        "unstaged": raw("diff"),
        "reflog": raw("reflog", "--format=%H %gs"),
        "files": {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()},
    }


def replay(tmp_path: Path, *sources: str) -> Path:
    folder = tmp_path / "candidates"
    folder.mkdir()
    for index, source in enumerate(sources):
        (folder / f"{index:02d}.py").write_text(source)
    return folder


def optimize(tmp_path, bundle, candidates, repo=None, **config):
    lines: list[str] = []
    result = loop.run(
        loop.RunConfig(
            bundle=bundle,
            output=tmp_path / "out",
            kernel=repo / "kernel.py" if repo else None,
            provider="replay",
            provider_options=ProviderOptions(replay_dir=str(candidates)),
            progress=lines.append,
            **config,
        )
    )
    return result, "\n".join(lines)


def experiment(result, exp_id: str) -> dict:
    return next(e for e in result.document["experiments"] if e["experiment_id"] == exp_id)


def frozen_intact(tmp_path: Path, bundle: Path) -> None:
    """The user's bundle is untouched and the run's frozen copy matches its hashes."""
    assert (bundle / "harness.py").read_text() == HARNESS
    frozen = tmp_path / "out" / "bundle"
    assert (frozen / "harness.py").read_text() == HARNESS
    assert not (frozen / "harness.py").stat().st_mode & 0o222  # read-only
    assert not frozen.stat().st_mode & 0o222


# --------------------------------------------------------------------------- containment


@pytest.mark.parametrize(
    "mode, said",
    [
        ("hang", "timed out"),
        ("hang-ignoring-term", "timed out"),
        ("crash", "exited with status 3"),
        ("segfault", "killed by SIGSEGV"),
    ],
)
def test_a_candidate_that_hangs_or_dies_fails_and_the_run_goes_on(tmp_path, marker, mode, said):
    repo = kernel_repo(tmp_path)
    bundle = make_bundle(tmp_path, marker)
    candidates = replay(tmp_path, variant(COST=10.0, MODE=mode), variant(COST=50.0))
    result, log = optimize(tmp_path, bundle, candidates, repo)
    hostile = experiment(result, "r001-c000")
    assert hostile["status"] == "failed" and said in hostile["diagnostics"]
    assert result.exit_code == 0 and result.document["winner"] == "r001-c001"
    assert git("show", "HEAD:kernel.py", cwd=repo).stdout == variant(COST=50.0)
    assert "r001-c000 decision: failed" in log
    frozen_intact(tmp_path, bundle)
    assert live_with(marker) == []


@pytest.mark.parametrize("mode", ["fork", "setsid", "double-fork", "garbage"])
def test_what_a_harness_leaves_behind_dies_with_its_evaluation(tmp_path, marker, mode):
    repo = kernel_repo(tmp_path)
    bundle = make_bundle(tmp_path, marker)
    winner = variant(COST=50.0, MODE=mode)
    result, _ = optimize(tmp_path, bundle, replay(tmp_path, winner), repo)
    assert result.exit_code == 0 and result.document["winner"] == "r001-c000"
    assert git("show", "HEAD:kernel.py", cwd=repo).stdout == winner
    assert git("status", "--porcelain", cwd=repo).stdout == ""
    if mode == "garbage":
        log = (tmp_path / "out" / "experiments" / "r001-c000" / "harness.log").read_bytes()
        assert bytes(range(256)) in log and b"{not json" in log
    frozen_intact(tmp_path, bundle)
    assert live_with(marker) == []


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize(
    "verdict, named",
    [
        ("FAIL", "verify returned 'FAIL' (str)"),
        ({"passed": "false"}, "verify returned passed='false' (str)"),
        ({"passed": 1}, "verify returned passed=1 (int)"),
        ("True", "verify returned 'True' (str)"),
    ],
)
def test_only_a_real_true_passes_verify(tmp_path, marker, verdict, named):
    repo = kernel_repo(tmp_path)
    before = repo_state(repo)
    bundle = make_bundle(tmp_path, marker)
    result, _log = optimize(
        tmp_path, bundle, replay(tmp_path, variant(COST=10.0, VERDICT=verdict)), repo
    )
    wrong = experiment(result, "r001-c000")
    assert wrong["status"] == "rejected"
    assert named in wrong["diagnostics"], wrong["diagnostics"]
    assert result.exit_code == 2 and result.document["winner"] is None
    assert repo_state(repo) == before
    frozen_intact(tmp_path, bundle)
    assert live_with(marker) == []


# --------------------------------------------------------------------------- the frozen bundle


def test_a_candidate_that_edits_the_bundle_stops_the_run(tmp_path, marker):
    repo = kernel_repo(tmp_path)
    before = repo_state(repo)
    bundle = make_bundle(tmp_path, marker)
    # It would have let the next, wrong-but-fast candidate through.
    candidates = replay(
        tmp_path, variant(COST=50.0) + EDIT_BUNDLE, variant(COST=5.0, VERDICT="wrong")
    )
    result, log = optimize(tmp_path, bundle, candidates, repo)
    document = result.document
    assert result.exit_code == 1 and document["stopping_reason"] == "bundle_changed"
    assert "harness.py changed" in document["error"] and document["winner"] is None
    assert [e["experiment_id"] for e in document["experiments"]] == ["baseline"]  # none after
    assert "run stopped: the frozen bundle changed during r001-c000" in log
    assert document["auto_commit"] is None
    assert repo_state(repo) == before
    assert (bundle / "harness.py").read_text() == HARNESS  # the user's bundle is untouched
    frozen = (tmp_path / "out" / "bundle" / "harness.py").read_text()
    assert frozen.endswith("return True\n")  # the copy is what was edited, and it was caught
    assert document["bundle"]["sha256"]["harness.py"] != _sha(frozen)
    assert live_with(marker) == []


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_frozen_bundle_hashes_are_logged_and_recorded(tmp_path, marker):
    bundle = make_bundle(tmp_path, marker)
    (bundle / "helper_data.txt").write_text("data the harness reads\n")
    result, log = optimize(tmp_path, bundle, replay(tmp_path, variant(COST=50.0)))
    hashes = result.document["bundle"]["sha256"]
    assert set(hashes) == {
        "budget.json", "cases.json", "harness.py", "helper_data.txt", "kernel.py", "target.json"
    }  # fmt: skip
    assert hashes["harness.py"] == _sha(HARNESS)
    assert f"bundle sha256 {hashes['harness.py']} harness.py" in log
    assert result.document["artifacts_dir"] == str((tmp_path / "out").resolve())
    assert result.document["bundle"]["source"] == str(bundle)
    request = json.loads(
        (tmp_path / "out" / "experiments" / "r001-c000" / "request.json").read_text()
    )
    assert request["harness"] == str((tmp_path / "out" / "bundle" / "harness.py").resolve())
    frozen_intact(tmp_path, bundle)


# --------------------------------------------------------------------------- revalidation


def test_noise_that_vanishes_on_revalidation_is_not_committed(tmp_path, marker):
    repo = kernel_repo(tmp_path)
    before = repo_state(repo)
    bundle = make_bundle(tmp_path, marker, {"min_speedup": 1.02})
    result, log = optimize(tmp_path, bundle, replay(tmp_path, variant(LUCKY=True)), repo)
    document = result.document
    assert experiment(result, "r001-c000")["status"] == "promoted"
    performance = experiment(result, "r001-c000")["performance"]
    assert performance["aggregate_speedup"] == pytest.approx(1.111)
    assert result.exit_code == 2 and document["winner"] is None
    assert document["stopping_reason"] == "finalist_revalidation_failed"
    revalidation = document["revalidation"]
    assert not revalidation["passed"] and revalidation["aggregate_speedup"] == pytest.approx(1.0)
    assert any("below min_speedup 1.02" in r for r in revalidation["reasons"])
    assert "no winner: aggregate speedup 1.0000 below min_speedup 1.02" in log
    assert repo_state(repo) == before
    assert (tmp_path / "out" / "best_kernel.py").read_text() == KERNEL
    frozen_intact(tmp_path, bundle)
    assert live_with(marker) == []


# --------------------------------------------------------------------------- validation


def test_a_bundle_that_accepts_a_broken_kernel_is_refused(tmp_path, marker):
    from gitkb.errors import GitkbError

    bundle = make_bundle(tmp_path, marker)
    (bundle / "harness.py").write_text(HARNESS.replace('k["kernel"](3) != 3', "False"))
    with pytest.raises(GitkbError, match="accepts a deliberately broken kernel"):
        optimize(tmp_path, bundle, replay(tmp_path, variant(COST=50.0)))
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["stopping_reason"] == "bundle_accepts_broken_kernels"
    assert result["validation"]["broken_candidate_rejected"] is False
    assert live_with(marker) == []


def test_an_unstable_baseline_is_measured_twice_and_run_without_a_winner(tmp_path, marker):
    """TLX runs a bundle whose baseline is noisy; no candidate then passes the max_cv rule."""
    bundle = make_bundle(tmp_path, marker, {"max_cv": 0.05})
    noisy = HARNESS.replace(
        "return [cost] * repetitions", "return [cost * (1 + i % 2) for i in range(repetitions)]"
    )
    (bundle / "harness.py").write_text(noisy)
    result, log = optimize(tmp_path, bundle, replay(tmp_path, variant(COST=50.0)))
    assert re.search(r"not stable within max_cv 0.05: a cv=0\.\d+, twice", log)
    assert (tmp_path / "out" / "experiments" / "baseline-2").is_dir()
    assert result.document["validation"]["baseline_stable"] is False
    assert result.exit_code == 2 and experiment(result, "r001-c000")["status"] == "rejected"


def test_validation_is_recorded(tmp_path, marker):
    bundle = make_bundle(tmp_path, marker)
    result, log = optimize(tmp_path, bundle, replay(tmp_path, variant(COST=50.0)))
    validation = result.document["validation"]
    assert validation["broken_candidate_rejected_by"] == "verify"
    assert validation["broken_candidate_rejected"] and validation["protected_cases_pass"]
    assert "bundle validated" in log
    broken = (tmp_path / "out" / "experiments" / "bundle-check" / "kernel.py").read_text()
    assert broken.startswith(KERNEL) and "kernel = __gitkb_broken__" in broken


# --------------------------------------------------------------------------- the CLI


def test_flags_beat_budget_json_and_bound_the_agent_calls(tmp_path, marker):
    bundle = make_bundle(
        tmp_path, marker, {"max_rounds": 4, "candidates_per_round": 4, "max_cv": 0.3}
    )
    calls = tmp_path / "agent-calls"
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import os, sys\n"
        f"calls = {str(calls)!r}\n"
        "n = len(open(calls).read().splitlines()) if os.path.exists(calls) else 0\n"
        "open(calls, 'a').write('call\\n')\n"
        "text = open(sys.argv[1]).read()\n"
        "open(sys.argv[1], 'w').write(text.replace('def kernel', f'# try {n}\\ndef kernel'))\n"
    )
    done = kb(
        "optimize", str(bundle), "-o", str(tmp_path / "out"), "--provider", "command",
        "--agent-command", f"{sys.executable} {agent} {{candidate}}",
        "--max-rounds", "1", "--candidates-per-round", "2", "--max-cv", "0.05",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    assert calls.read_text().splitlines() == ["call", "call"]
    document = json.loads(done.stdout)
    assert document["budget"]["max_cv"] == 0.05 and document["budget"]["max_rounds"] == 1
    assert document["budget_sources"] == {
        "max_rounds": "flag",
        "candidates_per_round": "flag",
        "max_candidate_seconds": "budget.json",
        "max_total_seconds": "default",
        "min_speedup": "default",
        "max_cv": "flag",
        "benchmark_repetitions": "budget.json",
    }
    assert b"max_cv=0.05 (flag)" in done.stderr
    assert live_with(marker) == []


@pytest.mark.parametrize(
    "provider_args, said",
    [
        (["--provider", "codex", "--agent-bin", "/nonexistent/codex"], b"is not executable"),
        (["--provider", "claude"], b"'claude' is not on PATH"),
        (["--provider", "command", "--agent-command", "no-such-agent-x {candidate}"],
         b"'no-such-agent-x' is not on PATH"),
    ],
)  # fmt: skip
def test_a_missing_agent_is_refused_before_the_baseline(tmp_path, marker, provider_args, said):
    bundle = make_bundle(tmp_path, marker)
    done = kb(
        "optimize", str(bundle), "-o", str(tmp_path / "out"), *provider_args,
        env={"PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 1 and said in done.stderr
    assert done.stderr.startswith(b"gitkb: error: ") and done.stderr.count(b"\n") == 1
    assert not (tmp_path / "out").exists()  # nothing ran, not even the baseline


def test_usage_errors_exit_1(tmp_path, marker):
    bundle = make_bundle(tmp_path, marker)
    done = kb("optimize", str(bundle), "--no-such-flag")
    assert done.returncode == 1 and b"No such option" in done.stderr
    done = kb("optimize", str(bundle), "--max-rounds", "zero")
    assert done.returncode == 1 and b"Invalid value" in done.stderr
    done = kb("optimize", "--harness", str(bundle / "harness.py"))
    assert done.returncode == 1 and b"--cases, --target as well" in done.stderr


def test_the_tlx_command_line_runs_unchanged(tmp_path, marker):
    bundle = make_bundle(tmp_path, marker)
    (bundle / "reference_kernel.py").write_text("def kernel(x):\n    return x\n")
    harness = HARNESS.replace(
        "def verify(k, case):\n",
        "def verify(k, case):\n"
        "    ref = {}\n"
        "    exec(open(os.environ['TLX_REFERENCE_KERNEL_PATH']).read(), ref)\n"
        "    if ref['kernel'](3) != k['kernel'](3):\n"
        "        return False\n",
    )
    (bundle / "harness.py").write_text(harness)
    repo = kernel_repo(tmp_path)
    candidates = replay(tmp_path, variant(COST=50.0))
    done = kb(
        "optimize",
        "--kernel", str(repo / "kernel.py"),
        "--harness", str(bundle / "harness.py"),
        "--cases", str(bundle / "cases.json"),
        "--target", str(bundle / "target.json"),
        "--output-dir", str(tmp_path / "out"),
        "--provider", "replay", "--replay-dir", str(candidates),
        "--max-rounds", "1", "--candidates-per-round", "2",
        "--max-candidate-seconds", "20", "--max-total-seconds", "600",
        "--min-speedup", "1.01", "--max-cv", "0.10", "--benchmark-repetitions", "3",
        "--profile",
        "--reference-kernel", str(bundle / "reference_kernel.py"),
        "--budget", str(bundle / "budget.json"),
        "--arch", "x86_64", "--model", "some-model",
        "--vcs", "git", "--commit-message", "Halve the cost",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    document = json.loads(done.stdout)
    assert document["auto_commit"]["success"] and document["winner"] == "r001-c000"
    assert git("log", "-1", "--format=%s", cwd=repo).stdout.strip() == "Halve the cost"
    assert "reference_kernel.py" in document["bundle"]["sha256"]
    reference = (bundle / "reference_kernel.py").read_text()
    assert (tmp_path / "out" / "reference_kernel.py").read_text() == reference  # TLX's copy
    assert document["device"]["architecture"] == "x86_64"
    assert document["cases"] == [
        {"case_id": "a", "parameters": {"n": 1024}, "weight": 1.0, "protected": True}
    ]
    assert live_with(marker) == []
    mismatch = kb(
        "optimize", str(bundle), "-o", str(tmp_path / "out2"), "--arch", "sm_90",
    )  # fmt: skip
    assert mismatch.returncode == 1 and b"--arch sm_90" in mismatch.stderr
    # The BUNDLE shorthand keeps working, with an explicit file in place of the bundle's.
    shorthand = kb(
        "optimize", str(bundle), "-o", str(tmp_path / "out3"), "--provider", "replay",
        "--replay-dir", str(candidates), "--budget", str(bundle / "budget.json"),
    )  # fmt: skip
    assert shorthand.returncode == 0, shorthand.stderr.decode()[-2000:]


def test_a_refusing_hook_is_exit_3_with_its_message_and_every_artifact_kept(tmp_path, marker):
    repo = kernel_repo(tmp_path)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'kernel changes need a ticket number' >&2\nexit 1\n")
    hook.chmod(0o755)
    (repo / "notes.txt").write_text("notes\nwork in progress\n")
    before = repo_state(repo)
    bundle = make_bundle(tmp_path, marker)
    done = kb(
        "optimize", str(bundle), "--kernel", str(repo / "kernel.py"), "-o", str(tmp_path / "out"),
        "--provider", "replay", "--replay-dir", str(replay(tmp_path, variant(COST=50.0))),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr.decode()[-2000:]
    assert b"kernel changes need a ticket number" in done.stderr
    document = json.loads(done.stdout)
    # TLX: the optimization succeeded (success true), the commit did not (exit 3)
    assert document["winner"] == "r001-c000" and document["success"]
    assert not document["auto_commit"]["success"]
    auto = json.loads((tmp_path / "out" / "auto_commit.json").read_text())
    assert not auto["success"] and "kernel changes need a ticket number" in auto["diagnostics"]
    out = tmp_path / "out"
    assert (out / "best_kernel.py").read_text() == variant(COST=50.0)
    assert (out / "trace" / "kernel.py").read_text() == variant(COST=50.0)
    assert (out / "experiments" / "final" / "response.json").is_file()
    assert repo_state(repo) == before
    frozen_intact(tmp_path, bundle)
    assert live_with(marker) == []
