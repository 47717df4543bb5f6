"""The optimization loop end to end: a fake harness whose timings are set by the
candidate's own constants, so every verdict is deterministic."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from helpers import git, kb
from helpers.optimize_runs import KERNEL, make_bundle, replay_dir, run, statuses, variant

from gitkb.errors import GitkbError
from gitkb.optimize import loop

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def test_incorrect_candidate_rejected_then_faster_one_promoted(tmp_path):
    bundle = make_bundle(tmp_path)
    replay = replay_dir(tmp_path, variant(COST=10.0, BROKEN=["small"]), variant(COST=50.0))
    result, lines = run(tmp_path, bundle, replay=replay)
    assert statuses(result)[1:] == [("r001-c000", "rejected"), ("r001-c001", "promoted")]
    assert result.exit_code == 0 and result.document["winner"] == "r001-c001"
    assert result.document["final"]["aggregate_speedup"] == pytest.approx(2.0)
    assert result.document["stopping_reason"] == "no_candidates"
    assert any(  # the TLX agent's progress line, for its log scrapers
        line.startswith(
            "[tlx-agent] r001-c001 status=promoted aggregate_speedup=2.0000x "
            "case=small,correct,median=50.000us,p95=50.000us,cv=0.0000,speedup=2.0000x"
        )
        for line in lines
    )
    out = tmp_path / "out"
    for name in (
        "best_kernel.py",
        "result.json",
        "experiments.json",
        "baseline_profile.json",
        "best_profile.json",
        "experiments/r001-c001/kernel.py",
        "experiments/r001-c001/result.json",
        "experiments/r001-c001/profile.json",
    ):
        assert (out / name).exists(), name
    assert "COST = 50.0" in (out / "best_kernel.py").read_text()
    assert not (out / "auto_commit.json").exists()


def test_unprotected_failure_does_not_block(tmp_path):
    bundle = make_bundle(tmp_path)
    result, _ = run(
        tmp_path, bundle, replay=replay_dir(tmp_path, variant(COST=50.0, BROKEN=["large"]))
    )
    assert statuses(result)[1] == ("r001-c000", "promoted")
    final = {c["case_id"]: c for c in result.document["final"]["cases"]}
    assert final["large"]["verification"]["passed"] is False and final["small"]["speedup"] == 2.0


def test_noisy_candidate_blocked(tmp_path):
    bundle = make_bundle(tmp_path)
    result, _ = run(tmp_path, bundle, replay=replay_dir(tmp_path, variant(COST=50.0, JITTER=0.5)))
    assert statuses(result)[1] == ("r001-c000", "rejected")
    assert "noisy timing" in result.document["experiments"][1]["diagnostics"]
    assert result.exit_code == 2 and result.document["winner"] is None


def test_loop_continues_after_a_dry_round_and_feeds_exclusions(tmp_path):
    bundle = make_bundle(tmp_path, {"max_rounds": 3, "candidates_per_round": 1})
    replay = replay_dir(tmp_path, variant(COST=200.0), variant(COST=40.0))
    result, _ = run(tmp_path, bundle, replay=replay)
    assert statuses(result)[1:] == [("r001-c000", "rejected"), ("r002-c000", "promoted")]
    assert result.document["stopping_reason"] == "no_candidates"


def test_duplicate_and_shortened_candidates_fail_unevaluated(tmp_path):
    """Refused before evaluation: TLX's status for a candidate that never ran is failed."""
    bundle = make_bundle(tmp_path)
    shortened = "COST = 1.0\n\n\ndef kernel(x):\n    return x\n"
    replay = replay_dir(tmp_path, KERNEL, shortened, variant(COST=50.0), variant(COST=50.0))
    result, _ = run(tmp_path, bundle, replay=replay)
    diagnostics = [e["diagnostics"] for e in result.document["experiments"][1:]]
    assert statuses(result)[1:] == [
        ("r001-c000", "failed"),
        ("r001-c001", "failed"),
        ("r001-c002", "promoted"),
        ("r001-c003", "failed"),
    ]
    assert "duplicate" in diagnostics[0] and "shortened" in diagnostics[1]
    assert "duplicate" in diagnostics[3]
    # Pre-evaluation rejections are not run, so they leave no trace version.
    log = git("log", "--format=%s", cwd=tmp_path / "out" / "trace").stdout.splitlines()
    assert len(log) == 2


def test_failed_final_revalidation_restores_the_baseline(tmp_path):
    mark = tmp_path / "flaky-mark"
    bundle = make_bundle(tmp_path, env={"FAKE_FLAKY_MARK": str(mark)})
    result, _ = run(tmp_path, bundle, replay=replay_dir(tmp_path, variant(COST=50.0, FLAKY=True)))
    assert statuses(result)[1] == ("r001-c000", "promoted")
    assert result.document["stopping_reason"] == "finalist_revalidation_failed"
    assert result.document["winner"] is None and result.exit_code == 2
    assert (tmp_path / "out" / "best_kernel.py").read_text() == KERNEL
    trace = tmp_path / "out" / "trace"
    assert (trace / "kernel.py").read_text() == KERNEL
    memory = json.loads((trace / "memory" / "v1.json").read_text())
    assert memory["quality_gate"]["result"] == "FAIL"
    assert "revalidation" in memory["quality_gate"]["failure_reason"]


def test_near_threshold_candidate_is_rerun(tmp_path):
    bundle = make_bundle(tmp_path, {"min_speedup": 1.02})
    result, lines = run(tmp_path, bundle, replay=replay_dir(tmp_path, variant(COST=100 / 1.025)))
    assert statuses(result)[1] == ("r001-c000", "promoted")
    assert (tmp_path / "out" / "experiments" / "r001-c000-rerun" / "response.json").exists()
    line = "[tlx-agent] r001-c000 status=near-threshold-profiling diagnostics=reason=near_threshold"
    assert line in lines


def test_trace_format(tmp_path):
    bundle = make_bundle(tmp_path)
    replay = replay_dir(tmp_path, variant(COST=10.0, BROKEN=["small"]), variant(COST=50.0))
    result, _ = run(tmp_path, bundle, replay=replay)
    trace = tmp_path / "out" / "trace"
    log = git("log", "--reverse", "--format=%s%x00%b%x01", cwd=trace).stdout.split("\x01")
    subjects = [entry.strip().split("\x00")[0] for entry in log if entry.strip()]
    assert subjects[0] == "v0: baseline kernel"
    assert subjects[1].startswith("v1: reverted (protected case failed: small)")
    assert subjects[2].startswith("v2: ") and subjects[2].endswith("(+100.0%)")
    assert git("status", "--porcelain", cwd=trace).stdout == ""
    changed = git("show", "--name-only", "--format=", "HEAD~1", cwd=trace).stdout.split()
    assert changed == ["memory/v1.json"]  # a rejection does not touch kernel.py
    v0 = json.loads(git("show", "HEAD~2:memory/v0.json", cwd=trace).stdout)
    assert v0["correctness"]["status"] == "PASS" and v0["quality_gate"]["result"] == "PASS"
    assert v0["performance"]["latency_us_by_shape"] == {"small": 100.0, "large": 400.0}
    v2 = json.loads((trace / "memory" / "v2.json").read_text())
    assert v2["performance"]["speedup_vs_ref_geomean"] == pytest.approx(2.0)
    assert v2["performance"]["measurement_status"] == "complete"
    solution = json.loads((trace / "solution.json").read_text())
    assert solution["spec"]["target_hardware"] == ["cpu"]
    assert result.document["trace"]["head"] == git("rev-parse", "HEAD", cwd=trace).stdout.strip()


def test_knobs_sweep_is_deterministic_and_best_first(tmp_path):
    bundle = make_bundle(
        tmp_path,
        {"max_rounds": 3, "candidates_per_round": 3},
        tunables={"COST": [100.0, 80.0, 60.0, 120.0]},
    )
    result, _ = run(tmp_path, bundle, provider="knobs")
    changes = [e["mutation_summary"] for e in result.document["experiments"][1:]]
    assert changes == [
        "set COST from 100.0 to 80.0",
        "set COST from 80.0 to 60.0",
        "set COST from 60.0 to 120.0",
    ]
    assert result.document["winner"] == "r001-c001"
    assert result.document["stopping_reason"] == "no_candidates"


def test_command_provider_with_a_fake_agent(tmp_path):
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json, os, sys\n"
        "prompt = open(os.environ['GITKB_PROMPT_FILE']).read()\n"
        "assert 'make COST small' in prompt and '| small |' in prompt\n"
        "path = sys.argv[1]\n"
        "text = open(path).read()\n"
        "open(path, 'w').write(text.replace('COST = 100.0', 'COST = 25.0'))\n"
        "json.dump({'hypothesis': 'less cost', 'change': 'COST 100 -> 25',\n"
        "           'commit_title': 'Cut the cost'}, open('candidate_metadata.json', 'w'))\n"
    )
    bundle = make_bundle(tmp_path, {"candidates_per_round": 2})
    result, _ = run(
        tmp_path,
        bundle,
        provider="command",
        options={"agent_command": f"{sys.executable} {agent} {{candidate}}"},
    )
    first, second = result.document["experiments"][1:]
    assert first["status"] == "promoted" and first["mutation_summary"] == "COST 100 -> 25"
    # the second proposal starts from the new best: the agent changes nothing -> duplicate
    assert second["status"] == "failed" and "duplicate" in second["diagnostics"]


@pytest.mark.parametrize("provider", ["codex", "claude"])
def test_agent_adapters_run_the_cli_with_its_argv(tmp_path, provider):
    fake = tmp_path / f"fake-{provider}"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "json.dump(sys.argv[1:], open('argv.json', 'w'))\n"
        "text = open('candidate.py').read()\n"
        "open('candidate.py', 'w').write(text.replace('COST = 100.0', 'COST = 20.0'))\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    bundle = make_bundle(tmp_path, {"candidates_per_round": 1})
    result, _ = run(tmp_path, bundle, provider=provider, options={"agent_bin": str(fake)})
    assert result.document["winner"] == "r001-c000"
    argv = json.loads((tmp_path / "out" / "workspaces" / "r001-c000" / "argv.json").read_text())
    if provider == "codex":
        assert argv[:3] == ["exec", "--full-auto", "--skip-git-repo-check"]
    else:
        assert argv[0] == "-p" and "acceptEdits" in argv
    assert any("Optimize the kernel in candidate.py" in a for a in argv)


def test_failing_agent_is_a_failed_experiment(tmp_path):
    bundle = make_bundle(tmp_path, {"candidates_per_round": 1})
    result, _ = run(
        tmp_path,
        bundle,
        provider="command",
        options={"agent_command": f"{sys.executable} -c 'raise SystemExit(4)'"},
    )
    experiment = result.document["experiments"][1]
    assert experiment["status"] == "failed" and "status 4" in experiment["diagnostics"]


def test_bad_bundles_are_refused_before_anything_runs(tmp_path):
    bundle = make_bundle(tmp_path)
    cases = json.loads((bundle / "cases.json").read_text())
    cases[0]["weight"] = 0
    (bundle / "cases.json").write_text(json.dumps(cases))
    with pytest.raises(GitkbError, match=r"\[0\]\.weight .*cases\.json"):
        run(tmp_path, bundle, replay=replay_dir(tmp_path, KERNEL))
    assert not (tmp_path / "out").exists()
    (bundle / "cases.json").write_text(json.dumps([{"case_id": "a"}]))
    # TLX ignores keys it does not know, and refuses a min_speedup below 1
    (bundle / "budget.json").write_text(json.dumps({"max_round": 2, "min_speedup": 0.9}))
    with pytest.raises(GitkbError, match="min_speedup.*budget.json"):
        run(tmp_path, bundle, provider="knobs")
    (bundle / "budget.json").unlink()
    (bundle / "harness.py").write_text("def build(s, t):\n    return 1\n")
    with pytest.raises(GitkbError, match="defines no verify, benchmark"):
        run(tmp_path, bundle, provider="knobs")


def test_baseline_failing_a_protected_case_aborts(tmp_path):
    bundle = make_bundle(tmp_path)
    (bundle / "kernel.py").write_text(variant(BROKEN=["small"]))
    with pytest.raises(GitkbError, match="baseline does not pass"):
        run(tmp_path, bundle, replay=replay_dir(tmp_path, KERNEL))


# --------------------------------------------------------------------------- CLI and commits


def kernel_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "kernel.py").write_text(KERNEL)
    (repo / "other.txt").write_text("one\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "start", cwd=repo)
    return repo


def test_cli_commits_the_winner_into_git(tmp_path):
    bundle = make_bundle(tmp_path)
    repo = kernel_repo(tmp_path)
    (repo / "other.txt").write_text("staged\n")
    git("add", "other.txt", cwd=repo)
    (repo / "other.txt").write_text("staged and dirty\n")
    replay = replay_dir(tmp_path, variant(COST=50.0))
    done = kb(
        "optimize",
        str(bundle),
        "--kernel",
        str(repo / "kernel.py"),
        "-o",
        str(tmp_path / "out"),
        "--provider",
        "replay",
        "--replay-dir",
        str(replay),
        "--commit-message",
        "Halve the cost",
    )
    assert done.returncode == 0, done.stderr.decode()
    document = json.loads(done.stdout)
    assert document["auto_commit"]["success"] and document["winner"] == "r001-c000"
    assert b"[tlx-agent] r001-c000 status=promoted" in done.stderr
    assert b"[tlx-agent] commit status=committed vcs=git id=" in done.stderr
    message = git("log", "-1", "--format=%B", cwd=repo).stdout
    assert message.startswith("Halve the cost\n")
    trailers = git("interpret-trailers", "--parse", input=message, cwd=repo).stdout
    assert "TLX-Agent: authored" in trailers and "KB-Speedup: 2.0000" in trailers
    assert f"KB-Trace-Commit: {document['trace']['head']}" in trailers
    assert git("show", "--name-only", "--format=", "HEAD", cwd=repo).stdout.split() == ["kernel.py"]
    assert (repo / "other.txt").read_text() == "staged and dirty\n"
    assert git("show", ":other.txt", cwd=repo).stdout == "staged\n"
    auto = json.loads((tmp_path / "out" / "auto_commit.json").read_text())
    head = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    assert auto["success"] and auto["commit_revision"] == head


def test_cli_exit_3_when_head_moves_during_the_run(tmp_path):
    repo = kernel_repo(tmp_path)
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import subprocess\n"
        f"subprocess.run(['git', 'commit', '-q', '--allow-empty', '-m', 'meanwhile'], "
        f"cwd={str(repo)!r}, check=True)\n"
    )
    bundle = make_bundle(tmp_path, env={"FAKE_BUILD_HOOK": str(hook)})
    replay = replay_dir(tmp_path, variant(COST=50.0, RUN_HOOK=True))
    done = kb(
        "optimize",
        str(bundle),
        "--kernel",
        str(repo / "kernel.py"),
        "-o",
        str(tmp_path / "out"),
        "--provider",
        "replay",
        "--replay-dir",
        str(replay),
    )
    assert done.returncode == 3, done.stderr.decode()
    auto = json.loads((tmp_path / "out" / "auto_commit.json").read_text())
    assert not auto["success"] and "HEAD moved" in auto["diagnostics"]
    assert git("log", "-1", "--format=%s", cwd=repo).stdout.strip() == "meanwhile"
    assert (repo / "kernel.py").read_text() == KERNEL
    assert (tmp_path / "out" / "best_kernel.py").read_text() == variant(COST=50.0, RUN_HOOK=True)


def test_cli_exit_codes_no_winner_and_usage(tmp_path):
    bundle = make_bundle(tmp_path)
    replay = replay_dir(tmp_path, variant(COST=500.0))
    done = kb(
        "optimize",
        str(bundle),
        "-o",
        str(tmp_path / "out"),
        "--provider",
        "replay",
        "--replay-dir",
        str(replay),
    )
    assert done.returncode == 2 and json.loads(done.stdout)["winner"] is None
    assert json.loads(done.stdout)["auto_commit"] is None
    done = kb("optimize", str(tmp_path / "missing"))
    assert done.returncode == 1 and done.stderr.startswith(b"gitkb: error: bundle is not a folder")
    done = kb("optimize", str(bundle), "--kernel", str(tmp_path / "loose.py"))
    assert done.returncode == 1


def test_untracked_kernel_is_refused_before_the_run(tmp_path):
    """TLX decides the commit before the loop: exit 3, a failed auto_commit on stdout."""
    repo = kernel_repo(tmp_path)
    (repo / "new.py").write_text(KERNEL)
    bundle = make_bundle(tmp_path)
    done = kb(
        "optimize", str(bundle), "--kernel", str(repo / "new.py"), "-o", str(tmp_path / "out")
    )
    assert done.returncode == 3
    auto = json.loads(done.stdout)
    assert auto["requested"] and not auto["success"] and "not tracked by git" in auto["diagnostics"]
    assert auto["subject"] == "Optimize new.py with TLX agent"
    assert b"[tlx-agent] commit status=failed vcs=unknown" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(
    not os.environ.get("PATH") or not __import__("shutil").which("hg"),
    reason="Mercurial (hg) is not installed",
)
def test_cli_commits_the_winner_into_hg(tmp_path):
    import subprocess

    repo = tmp_path / "hgrepo"
    repo.mkdir()
    env = dict(os.environ, HGPLAIN="1", HGUSER="Test <t@example.invalid>")

    def hg(*args):
        return subprocess.run(
            ["hg", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
        ).stdout

    hg("init")
    (repo / "kernel.py").write_text(KERNEL)
    (repo / "notes.txt").write_text("a\n")
    hg("add", "kernel.py", "notes.txt")
    hg("commit", "-m", "start")
    (repo / "notes.txt").write_text("a\nwork in progress\n")
    bundle = make_bundle(tmp_path)
    replay = replay_dir(tmp_path, variant(COST=50.0))
    done = kb(
        "optimize",
        str(bundle),
        "--kernel",
        str(repo / "kernel.py"),
        "-o",
        str(tmp_path / "out"),
        "--provider",
        "replay",
        "--replay-dir",
        str(replay),
        env={"HGUSER": "Test <t@example.invalid>"},
    )
    assert done.returncode == 0, done.stderr.decode()
    assert hg("status", "--change", ".", "-n").split() == ["kernel.py"]
    assert "TLX agent authored" in hg("log", "-r", ".", "-T", "{desc}")
    assert (repo / "notes.txt").read_text() == "a\nwork in progress\n"
    assert hg("status", "-n").split() == ["notes.txt"]


def test_cpu_example_finds_a_real_speedup_and_commits_it(tmp_path):
    pytest.importorskip("numpy")
    import shutil

    from gitkb.util.resources import data_dir

    example = tmp_path / "blocked_matmul"
    shutil.copytree(data_dir("targets") / "cpu" / "examples" / "blocked_matmul", example)
    # A loaded test machine makes timings noisy; the speedup here is far above the noise.
    budget = json.loads((example / "budget.json").read_text())
    (example / "budget.json").write_text(json.dumps(dict(budget, max_cv=10.0)))
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "kernel.py").write_bytes((example / "kernel.py").read_bytes())
    git("add", "kernel.py", cwd=repo)
    git("commit", "-qm", "matmul", cwd=repo)
    done = kb(
        "optimize", str(example), "--kernel", str(repo / "kernel.py"), "-o", str(tmp_path / "out")
    )
    assert done.returncode == 0, done.stderr.decode()
    document = json.loads(done.stdout)
    assert document["final"]["aggregate_speedup"] > 1.5 and document["auto_commit"]["success"]
    assert "BLOCK = 16" not in git("show", "HEAD:kernel.py", cwd=repo).stdout


def test_a_rejection_lesson_is_mined_into_an_anti_strategy(tmp_path, store):
    """The softmax example: dropping the max subtraction overflows on the large-logits case.
    The trace states the change, the case with its parameters and the harness's reason, so
    mining keeps the lesson (it was skipped as "no cause of 40+ characters")."""
    pytest.importorskip("numpy")
    import shutil

    from gitkb.mine.pipeline import mine
    from gitkb.util.resources import data_dir

    example = tmp_path / "softmax_unsafe"
    shutil.copytree(data_dir("targets") / "cpu" / "examples" / "softmax_unsafe", example)
    lines = []
    result = loop.run(
        loop.RunConfig(
            bundle=example,
            output=tmp_path / "out",
            budget_flags={"max_cv": 10.0, "max_rounds": 1, "candidates_per_round": 2},
            progress=lines.append,
        )
    )
    overflow = result.document["experiments"][1]
    assert overflow["mutation_summary"] == "set SUBTRACT_MAX from True to False"
    assert overflow["status"] == "rejected"
    body = git("log", "--format=%B", cwd=tmp_path / "out" / "trace").stdout
    assert (
        "dead-end recorded: set SUBTRACT_MAX from True to False is incorrect on protected case "
        "large-logits (rows=1024, cols=512, scale=60.0, seed=2) because the harness reported "
        "non-finite output (overflow)"
    ) in body
    mined = mine(tmp_path / "out" / "trace", store=store)
    anti = [o for o in mined.outcomes if o.record_type == "anti-strategy"]
    assert [o.action for o in anti] == ["insert"], mined.summary()["outcomes"]
    record = json.loads(
        next((store.location / "records" / "anti-strategy").rglob("*.json")).read_text()
    )
    fact = record["payload"]["established_fact"]
    assert fact["condition"]["shape_regime"] == "rows=1024"
    assert "because the harness reported non-finite output (overflow)" in fact["mechanism"]
    assert record["payload"]["verdict"] == "accuracy-gate/ceiling"
