"""Mining what the Atrex Kernel Agent itself writes (docs/trace-format.md, rules 13-15).

The fixtures reproduce the producer's shapes as its own code writes them: the SOL seed's
``V0: baseline (SOL reference wrapper)``, the V1 manifest that drops ``target_hardware``,
journals copied into memory the way ``_memory_experience`` folds them, rejected
experiments inside a promoted episode, a ``candidate_ready`` candidate the ABBA verifier
refused (in its words), an ``invalid_handoff`` carry-forward, episode branches left
unreachable by the squash, git-excluded profiles; and, for the revision before the legacy
loop was removed, a one-commit ``V0: baseline kernel``, amended wins, and dead-ends whose
cause sits only in ``pitfalls_and_fixes`` of either dialect.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, git, kb

from gitkb.mine.pipeline import mine, run_recon
from gitkb.store import Store
from gitkb.testing.trace_builder import Trace
from gitkb.testing.trace_files import kernel_source, memory
from gitkb.testing.traces import TMA_EXPERIMENT

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

LABEL = "kernel_opt_001_softmax"
PACKED = (
    "rejected on sm_100 with bf16 inputs because the packed conversion rounds each pair "
    "before the max subtraction, so the row maximum loses its low bits"
)
SMEM = (
    "slower on sm_100 for rows of 4096 columns because the shared-memory round trip costs "
    "more than the second global read, which the L2 already serves"
)
TMA = TMA_EXPERIMENT["result"]
FP16 = (
    "on sm_90 the accumulation overflows because the fp16 sum of squares overflows past "
    "65504 for rows of 8192 columns"
)
SPLIT = (
    "splitting a row across two CTAs on sm_90 adds a second pass because the partial maxima "
    "must be combined through global memory"
)


def long_horizon_producer(path) -> Trace:
    """The current producer: SOL seed v0 200 us; framework v1 100 us; episode 1 promotes v2
    (80 us, ABBA 18.5%) with a rejected bf16 experiment inside it; episode 2 pivots (v3)
    on a TMA experiment; episode 3's candidate is refused by ABBA (v4, -2.70%); episode 4
    promotes v5 (70 us, 12.5%); episode 5 ends invalid_handoff (v6 carries v5 forward)."""
    t = Trace(path)
    t.sol_seed(200.0)
    pin = t.framework_v1(100.0)
    t.episode_branch(1, pin, 2)
    t.promote(
        1,
        2,
        80.0,
        18.5,
        "two warps per row with partial sums kept in registers until the final shuffle",
        experiments=[
            {
                "name": "two-warp rows",
                "hypothesis": "halving each warp's row keeps the partial sums in registers",
                "change": "split each row across two warps",
                "evidence": "dev run 82 us on the widest shape",
                "result": "faster on wide rows",
                "decision": "continue",
                "conclusion": "rows of 4096 columns no longer spill because each warp holds "
                "half the partial sums in registers",
            },
            {
                "name": "bf16 packed loads",
                "hypothesis": "packing two bf16 values per 32-bit load halves the load count",
                "change": "load rows as packed bf16x2 pairs",
                "evidence": "max_abs_err 0.02 on 2 of 3 shapes",
                "result": PACKED,
                "decision": "revert",
            },
        ],
    )
    t.non_promotion(3, 2, "pivot", "v2", 80.0, experiments=[TMA_EXPERIMENT])
    t.rejected_candidate(
        4,
        3,
        "v2",
        80.0,
        "cache each row in shared memory between the max and the sum passes",
        experiments=[
            {
                "name": "smem row cache",
                "hypothesis": "one global read per row instead of two",
                "change": "stage the row in shared memory",
                "evidence": "dev runs 81 us",
                "result": SMEM,
                "decision": "continue",
            }
        ],
    )
    t.promote(4, 5, 70.0, 12.5, "cache the row maximum in registers across the two passes")
    t.non_promotion(6, 5, "invalid_handoff", "v5", 70.0)
    # Git-excluded long-horizon profiles: in the work tree only, never citable.
    t.worktree("profiles/episode_4/summary.txt", "Kernel: softmax_kernel\n")
    t.write()
    return t


def legacy_producer(path) -> Trace:
    """The revision before the legacy loop was removed: a one-commit V0, amended wins, and
    dead-ends whose cause is only in a pitfall of either dialect."""
    t = Trace(path)
    t.commit(
        "V0: baseline kernel",
        {
            "solution.json": {"spec": {"target_hardware": ["H100"], "languages": ["pytorch"]}},
            "definition.json": {"name": "rmsnorm", "description": "RMSNorm over 8192 columns"},
            "kernel.py": kernel_source(0),
            "memory/v0.json": memory("v0", 100.0, category="baseline", description="baseline"),
        },
    )
    t.legacy_keep(
        1,
        80.0,
        "vectorized 128-bit loads along the row",
        pct="+20.0%",
        expected_impact="fewer load instructions because each thread reads 8 bf16 at once",
        profile_evidence={
            "tool_used": "ncu",
            "bottleneck_type": "memory_bound",
            "evidence_summary": "DRAM throughput at 91% of peak: the kernel is memory-bound",
        },
    )
    t.legacy_revert(
        2,
        None,
        "accuracy",
        correctness="FAIL",
        description="accumulate the sum of squares in fp16",
        gate_failure="max_abs_err 0.31 over the tolerance",
        pitfalls=[
            {
                "error_type": "accuracy",
                "error_message": "max_abs_err 0.31 over the 0.01 tolerance",
                "root_cause": FP16,
                "fix_applied": "accumulate the sum of squares in fp32",
                "lesson": "keep reductions of squares in fp32",
            }
        ],
    )
    t.legacy_keep(3, 60.0, "two rows per program with num_warps 8", pct="+25.0%")
    t.legacy_revert(
        4,
        61.0,
        "slower",
        description="split each row across two CTAs",
        pitfalls=[{"pitfall": "two CTAs per row", "explanation": SPLIT, "fix": "one CTA per row"}],
    )
    t.write()
    return t


def records_of(store) -> dict[str, dict]:
    return {e["id"]: store.read_record(e["id"]).data for e in store.view().entries()}


def test_every_stated_lesson_of_the_long_horizon_producer(tmp_path, store):
    trace = long_horizon_producer(tmp_path / LABEL)
    result = mine(trace.path, store=store)
    actions = {o.seg_id: o.action for o in result.outcomes}
    assert actions == {
        "strategy-v1": "insert",
        "strategy-v2": "insert",
        "strategy-v5": "insert",
        "anti-v2-02": "insert",  # rejected inside the promoted episode 1
        "anti-v3-01": "insert",  # the pivot's rejected experiment
        "candidate-v4": "insert",  # the candidate ABBA refused
        "refk-final": "insert",
    }, [(o.seg_id, o.action, o.note) for o in result.outcomes]
    by_seg = {o.seg_id: store.read_record(o.record_id).data for o in result.outcomes}
    # The reference kernel is the newest measured promotion, never the carry-forward v6.
    assert by_seg["refk-final"]["evidence"]["raw"]["version"] == "v5"
    assert result.recon["final_reference_kernel"] == "v5"
    # One anti-strategy per lever, each with its condition and its cause in the trace's words.
    packed = by_seg["anti-v2-02"]["payload"]
    assert packed["established_fact"]["condition"]["sm_arch"] == "sm_100"
    assert packed["established_fact"]["condition"]["dtype"] == "bf16"
    assert packed["established_fact"]["mechanism"] == PACKED
    assert packed["attempted"] == "load rows as packed bf16x2 pairs"
    assert packed["observed"] == "max_abs_err 0.02 on 2 of 3 shapes"
    extra = by_seg["anti-v2-02"]["evidence"]["raw"]["evidence_extra"]
    assert extra["journal"] == "memory/long_horizon_e0001.json" and extra["experiments"] == [2]
    candidate = by_seg["candidate-v4"]["payload"]
    assert candidate["established_fact"]["mechanism"] == SMEM
    assert candidate["established_fact"]["condition"]["shape_regime"] == "rows of 4096 columns"
    assert (
        candidate["observed"] == "candidate improvement -2.7027027027027026 did not exceed 0.000%"
    )
    assert by_seg["anti-v3-01"]["payload"]["established_fact"]["mechanism"] == TMA
    # Strategies take their mechanism from the journal's conclusion, and the conditions it states.
    v2 = by_seg["strategy-v2"]["payload"]
    assert v2["mechanism"].startswith("rows of 4096 columns no longer spill")
    assert "rows of 4096 columns" in v2["applies_when"]
    assert by_seg["strategy-v2"]["worth"]["gain"]["pct"] == 18.5
    # Nothing was profiled (git-excluded profiles): no bottleneck is claimed.
    assert "bottleneck" not in v2["problem"]
    assert (
        by_seg["strategy-v2"]["evidence"]["summary"]["bottleneck_evidence"]["basis"] != "profiler"
    )
    check = kb("validate", "--full", str(store.location))
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()


def test_recon_on_the_producers_shapes(tmp_path):
    trace = long_horizon_producer(tmp_path / LABEL)
    recon = run_recon(trace.path)
    identity = recon["identity"]
    # v1's manifest states no target; the SOL seed's B200 decides, and recon says so.
    assert (identity["target"]["arch"], identity["target"]["product"]) == ("blackwell", "b200")
    assert identity["hardware_basis"].startswith("solution.json spec.target_hardware at ")
    assert identity["operator_basis"] == "definition.json name"
    attempts = {a["version"]: a for a in recon["long_horizon"]["attempts"]}
    assert {v: a["episode"] for v, a in attempts.items()} == {
        "v2": 1, "v3": 2, "v4": 3, "v5": 4, "v6": 5,
    }  # fmt: skip
    assert attempts["v4"]["status"] == "candidate_ready" and not attempts["v4"]["promoted"]
    assert attempts["v2"]["rejected_experiments"] == [2]
    # The episode branch's checkpoints are not versions; v2 cites the reachable squash.
    rows = {r["version"]: r for r in recon["ladder"]}
    assert rows["v0"]["kind"] == "baseline" and rows["v1"]["kind"] == "mega"
    assert recon["captures"]["total"] == 0


def test_every_stated_lesson_of_the_legacy_producer(tmp_path, store):
    trace = legacy_producer(tmp_path / "kernel_opt_002_rmsnorm")
    result = mine(trace.path, store=store)
    actions = {o.seg_id: o.action for o in result.outcomes}
    assert actions == {
        "strategy-v1": "insert",
        "strategy-v3": "insert",
        "pitfall-v2-01": "insert",  # the cause only in root_cause (producer dialect)
        "pitfall-v4-01": "insert",  # the cause only in explanation (consumer dialect)
        "refk-final": "insert",
    }, [(o.seg_id, o.action, o.note) for o in result.outcomes]
    by_seg = {o.seg_id: store.read_record(o.record_id).data for o in result.outcomes}
    fp16 = by_seg["pitfall-v2-01"]["payload"]
    assert fp16["established_fact"]["mechanism"] == FP16
    assert fp16["attempted"] == "accumulate the sum of squares in fp16"
    assert fp16["established_fact"]["condition"]["dtype"] == "fp16"
    assert fp16["would_retry_if"] == "accumulate the sum of squares in fp32"
    assert by_seg["pitfall-v4-01"]["payload"]["established_fact"]["mechanism"] == SPLIT
    # A profiler finding the agent stated fills the bottleneck, asserted (no capture).
    v1 = by_seg["strategy-v1"]
    assert v1["payload"]["problem"]["bottleneck"].endswith("the kernel is memory-bound")
    assert v1["retrieval"]["signals"]["symptoms"] == [v1["payload"]["problem"]["bottleneck"]]
    assert v1["evidence"]["summary"]["bottleneck_evidence"]["basis"] == "bench-only"
    assert v1["payload"]["mechanism"].startswith("fewer load instructions because")
    report = store.repo.read(store.tip, "reports/kernel_opt_002_rmsnorm/mine.md").decode()
    assert "| payload.problem.bottleneck | 1 of 2 |" in report
    check = kb("validate", "--full", str(store.location))
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()


def _without_source(records: dict[str, dict]) -> dict[str, dict]:
    for data in records.values():
        data["evidence"]["raw"].pop("source_repo")
    return records


@pytest.mark.parametrize("name", ["t", "kernel", "long-horizon", "softmax"])
def test_any_folder_name_mines_the_same_records(tmp_path, name):
    reference = long_horizon_producer(tmp_path / "ref" / LABEL)
    ours = Store.init(tmp_path / "ours")
    theirs = Store.init(tmp_path / "theirs")
    mine(reference.path, store=ours)
    folder = tmp_path / "named" / name
    shutil.copytree(reference.path, folder)
    result = mine(folder, store=theirs)
    label = result.label
    assert label.startswith("kernel_opt_softmax_") and label != name
    assert name in result.summary()["label_note"]
    assert all(o.action == "insert" for o in result.outcomes)
    assert _without_source(records_of(theirs)) == _without_source(records_of(ours))
    stated = json.loads(theirs.repo.read(theirs.tip, f"traces/{label}.json"))
    assert stated["label_basis"] == "chosen by gitkb" and stated["label_instead_of"] == name
    # No label's letters are scrubbed out of the text: the ids keep every "t".
    assert any("vectorized" in i or "two-warps" in i for i in records_of(theirs))


def test_label_flag_wins_and_remining_under_an_older_label_admits_nothing(tmp_path, store):
    trace = long_horizon_producer(tmp_path / LABEL)
    first = mine(trace.path, store=store)
    assert first.label == LABEL and first.summary()["label_note"] == ""
    tip = store.tip
    renamed = tmp_path / "t"
    git("clone", "-q", str(trace.path), str(renamed))
    again = mine(renamed, store=store)
    assert again.label == LABEL and "already holds" in again.summary()["label_note"]
    assert {o.action for o in again.outcomes} == {"confirm"}
    assert [c.trailers[0] for c in store.repo.walk(store.tip, exclude=(tip,))] == [
        ("KB-Action", "report")
    ]
    assert list(store.repo.refs("refs/kb/traces")) == [f"refs/kb/traces/{LABEL}"]
    # --label wins over the folder and the store; a colliding one is one clear line.
    flagged = mine(renamed, store=Store.init(tmp_path / "other"), label="run_2026_b200")
    assert flagged.label == "run_2026_b200"
    done = kb("mine", str(renamed), "--dry-run", "--label", "kernel")
    assert (
        done.returncode == 2 and "--label 'kernel' cannot name this trace" in done.stderr.decode()
    )


def test_memory_nested_5000_deep_degrades_its_version(tmp_path):
    t = Trace(tmp_path / LABEL)
    t.setup()
    t.legacy_keep(0, 100.0, "baseline softmax with three passes over each row")
    t.legacy_keep(1, 80.0, "merge the max and sum loops with an online rescale", pct="+20%")
    deep = b'{"performance": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    t.commit("v2: committed (+5%)", {"memory/v2.json": deep, "kernel.py": kernel_source(2)})
    shallow = b"[" * 100 + b"]" * 100
    t.commit("v3: committed (+5%)", {"memory/v3.json": shallow, "kernel.py": kernel_source(3)})
    t.write()
    done = kb("mine", str(t.path), "--dry-run", "--json")
    assert done.returncode == 0, done.stderr.decode()
    recon = run_recon(t.path)
    problems = {d["version"]: d["problems"] for d in recon["degradations"]}
    assert problems["v2"] == ["memory is JSON nested deeper than 64 levels; no numbers"]
    assert problems["v3"] == ["memory is JSON nested deeper than 64 levels; no numbers"]


ATREX = os.environ.get("GITKB_ATREX_REFERENCE")


def _producer_checkout(tmp_path) -> Path:
    """A work tree of the producer (the variable may name a checkout or a bare clone)."""
    clone = Path(ATREX)
    if (clone / "long_horizon").is_dir():
        return clone
    git_dir = clone if (clone / "objects").is_dir() else clone / ".git"
    export = tmp_path / "atrex"
    export.mkdir()
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "HEAD", "long_horizon", "orchestrator"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(export)], input=archive.stdout, check=True)
    return export


@pytest.mark.skipif(not ATREX, reason="GITKB_ATREX_REFERENCE names no producer clone")
def test_a_trace_the_producers_own_code_wrote(tmp_path, store):
    """The producer's supervisor, driven on a CPU by a scripted agent and a fixed ABBA
    verifier (tests/helpers/atrex_driver.py), in a folder named like the operator's first letter."""
    workspace = tmp_path / "t"
    driver = ROOT / "tests" / "helpers" / "atrex_driver.py"
    done = subprocess.run(
        [sys.executable, str(driver), str(_producer_checkout(tmp_path)), str(workspace)],
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    result = mine(workspace, store=store)
    assert result.label.startswith("kernel_opt_softmax_")
    assert {o.seg_id: o.action for o in result.outcomes} == {
        "strategy-v1": "insert",
        "strategy-v2": "insert",
        "strategy-v5": "insert",
        "anti-v2-02": "insert",
        "anti-v3-01": "insert",
        "candidate-v4": "insert",
        "refk-final": "insert",
    }, [(o.seg_id, o.note) for o in result.outcomes]
    assert result.recon["identity"]["hardware_basis"].startswith("solution.json")
    assert result.recon["final_reference_kernel"] == "v5"
    by_seg = {o.seg_id: store.read_record(o.record_id).data for o in result.outcomes}
    observed = by_seg["candidate-v4"]["payload"]["observed"]
    assert observed.startswith("candidate improvement -2.70") and "0.000%" in observed
    check = kb("validate", "--full", str(store.location))
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()


def test_a_trace_of_loose_objects_mines_dry(tmp_path):
    """Small traces (and C git's own commits) are loose objects, whose deflate streams may
    open with Huffman tables: the gates' size probe reads on until the header is inflated."""
    trace = long_horizon_producer(tmp_path / LABEL).path
    assert not list((trace / ".git" / "objects" / "pack").glob("*.pack"))
    done = kb("mine", str(trace), "--dry-run", "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["counts"] == {"dry-run": 7}
