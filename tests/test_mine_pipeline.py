"""`git kb mine` / `git kb recon` end to end: real traces, a real store, the real CLI,
the eighteen gates, re-mining, staging, external distillers, bad input, and a push
through the server hook."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import git, kb
from trace_factory import (
    SPILL_DEADEND,
    Symlink,
    Trace,
    kernel_only_trace,
    kernel_source,
    legacy_trace,
    long_horizon_trace,
)

from gitkb.errors import GitkbError
from gitkb.mine.pipeline import mine
from gitkb.store import Store

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def outcomes(result):
    return {o.seg_id: o.action for o in result.outcomes}


def test_mined_records_pass_all_eighteen_gates(tmp_path, store):
    legacy = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    longh = long_horizon_trace(tmp_path / "kernel_opt_002_softmax", bare=True)
    done = kb("mine", str(legacy), "--store", str(store.location), "--json")
    assert done.returncode == 0, done.stderr.decode()
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"insert": 8, "skip": 1}
    assert "payload.mechanism" in summary["missing_by_type"]["strategy"]
    result = mine(longh, store=store)
    assert outcomes(result) == {
        "strategy-v1": "insert",
        "strategy-v2": "insert",
        "strategy-v4": "insert",
        "anti-v3-01": "insert",
        "refk-final": "insert",
    }
    check = kb("validate", str(store.location))
    out = check.stdout.decode()
    assert check.returncode == 0, out + check.stderr.decode()
    assert "0 of 18 gates failed" in out
    assert store.repo.resolve("refs/kb/traces/kernel_opt_002_softmax") == result.head
    log = store.log()
    insert = next(e for e in log if e["action"] == "insert")
    assert insert["trailers"]["KB-Trace"] == "kernel_opt_002_softmax"
    assert store.repo.has_object(insert["trailers"]["KB-Trace-Commit"])
    assert store.repo.read(store.tip, "reports/kernel_opt_001_softmax/recon.md")


def test_remining_admits_nothing_new(tmp_path, store):
    trace = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    mine(trace, store=store)
    tip = store.tip
    again = mine(trace, store=store)
    assert set(outcomes(again).values()) == {"confirm", "skip"}
    new = [c.trailers for c in store.repo.walk(store.tip, exclude=(tip,))]
    assert new == [
        [
            ("KB-Action", "report"),
            ("KB-Record", "kernel_opt_001_softmax"),
            ("KB-Trace", "kernel_opt_001_softmax"),
        ]
    ]  # the run's report only
    tip = store.tip
    mine(trace, store=store)
    assert store.tip == tip


def test_another_trace_confirms_and_a_contradiction_is_queued(tmp_path, store):
    a = Trace(tmp_path / "kernel_opt_001_softmax")
    a.setup()
    a.legacy_keep(0, 100.0, "baseline kernel with three passes")
    a.legacy_keep(1, 80.0, SPILL_DEADEND, pct="+20%")
    a.write()
    mine(a.path, store=store)
    mine(a.path, store=store, label="kernel_opt_001_softmax_rerun")
    counted = store.read_record(
        next(e["id"] for e in store.view().entries() if e["type"] == "strategy")
    ).data["worth"]["track"]["counters"]["verified_effective"]
    assert counted == 1
    b = Trace(tmp_path / "kernel_opt_009_softmax")
    b.setup()
    b.legacy_keep(0, 100.0, "baseline kernel with three passes")
    b.legacy_revert(1, 120.0, "slower", [SPILL_DEADEND])
    b.write()
    result = mine(b.path, store=store)
    assert outcomes(result)["anti-v1-01"] == "conflict"
    assert any(p.startswith("conflicts/") for p, _ in store.repo.list_tree(store.tip, "conflicts"))


def test_dry_run_and_stage_only(tmp_path, store):
    trace = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    tip = store.tip
    result = mine(trace, store=store, dry_run=True)
    assert set(outcomes(result).values()) == {"dry-run", "skip"}
    assert store.tip == tip and not store.repo.refs("refs/kb/traces")
    stage = tmp_path / "stage"
    done = kb("mine", str(trace), "--stage-only", str(stage), "--store", str(tmp_path / "none"))
    assert done.returncode == 0, done.stderr.decode()
    assert len(list((stage / "records").rglob("*-s0*.json"))) == 3
    assert (stage / "reports" / "kernel_opt_001_softmax" / "mine.json").is_file()
    packets = sorted(p.stem for p in (stage / "packets" / "kernel_opt_001_softmax").iterdir())
    assert packets == sorted(s.seg_id for s in result.segments)
    # Mined records without their trace: the trace gates cannot run, and that is a failure.
    check = kb("validate", str(stage))
    out = check.stdout.decode()
    assert check.returncode == 1, out
    assert "trace gates could not run on mined records: verbatim, no-fabrication, provenance" in out
    check = kb("validate", str(stage), "--trace", str(trace))
    assert check.returncode == 0, check.stdout.decode()
    assert "0 of 18 gates failed" in check.stdout.decode()
    mine(trace, store=store)
    check = kb("validate", str(stage), "--store", str(store.location), "--json")
    document = json.loads(check.stdout)
    assert document["could_not_run"] == [] and document["failed"] == 0
    assert [g["gate"] for g in document["gates"] if g["status"] != "PASS"] == ["relations"]


def test_recon_cli(tmp_path):
    trace = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    done = kb("recon", str(trace), "--json")
    assert done.returncode == 0, done.stderr.decode()
    document = json.loads(done.stdout)
    assert document["citable_numbers"]["milestones"] == 4
    assert document["long_horizon"]["incumbent_lineage"] == ["v2", "v4"]
    assert document["store_coverage"] == {"store": None}
    text = kb("recon", str(trace)).stdout.decode()
    assert "usable-capture share: 0 of 0" in text


def test_kernel_only_trace_needs_hardware_flags(tmp_path, store):
    trace = kernel_only_trace(tmp_path / "kernel_opt_003_gemm")
    done = kb("mine", str(trace), "--store", str(store.location))
    assert done.returncode != 0
    assert b"--vendor/--arch/--product" in done.stderr and b"Traceback" not in done.stderr
    result = mine(trace, store=store, options=_options(vendor="nvidia", arch="hopper"))
    assert result.outcomes == [] and len(result.ingest.rows) == 0


def _options(**kw):
    from gitkb.trace.options import TraceOptions

    return TraceOptions(**kw)


def test_hardware_flags_are_kept_for_the_gates(tmp_path, store):
    t = Trace(tmp_path / "kernel_opt_004_softmax")
    t.setup(hardware="LOCAL")
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_keep(1, 80.0, "merge the max and sum loops", pct="+20%")
    t.write()
    result = mine(t.path, store=store, options=_options(product="h100"))
    assert outcomes(result)["strategy-v1"] == "insert"
    assert kb("validate", str(store.location)).returncode == 0


def _bad_traces(tmp_path: Path) -> dict[str, Path]:
    plain = tmp_path / "plain"
    plain.mkdir()
    empty = tmp_path / "empty"
    git("init", "-q", str(empty))
    no_kernel = Trace(tmp_path / "no_kernel")
    no_kernel.setup()
    escape = Trace(tmp_path / "escape")
    escape.setup()
    escape.commit("v0: link", {"kernel.py": Symlink("/etc/passwd")})
    return {
        "not a git repository": plain,
        "has no commits": empty,
        "has no kernel.py": no_kernel.write(),
        "leaves the trace": escape.write(),
    }


@pytest.mark.parametrize(
    "expected", ["not a git repository", "has no commits", "has no kernel.py", "leaves the trace"]
)
def test_bad_input_one_clear_line(tmp_path, store, expected):
    trace = _bad_traces(tmp_path)[expected]
    tip = store.tip
    done = kb("mine", str(trace), "--store", str(store.location))
    err = done.stderr.decode()
    if expected == "leaves the trace":
        # The link is refused before it is read: the version degrades, nothing is admitted.
        assert done.returncode == 0, err
        recon = kb("recon", str(trace), "--json")
        assert "leaves the trace" in recon.stdout.decode()
        assert "root:" not in recon.stdout.decode()
        return
    assert done.returncode != 0 and "Traceback" not in err
    assert err.count("\n") == 1 and expected in err
    assert store.tip == tip


def test_degraded_versions_are_reported_not_fatal(tmp_path, store):
    t = Trace(tmp_path / "kernel_opt_005_softmax")
    t.setup()
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.commit("v1: broken", {"kernel.py": kernel_source(1), "memory/v1.json": b"\xff{not json"})
    t.commit("v2: profile", {"profiles/v2/summary.txt": b"Kernel: k\n" + b"x" * 9437184})
    result = mine(t.write(), store=store)
    assert result.summary()["degraded_versions"] == ["v1"]
    recon = store.repo.read(store.tip, "reports/kernel_opt_005_softmax/recon.md").decode()
    assert "not UTF-8" in recon and "8 MiB" in recon


DISTILLER = """
import json, os, sys
packet = json.load(open(os.environ["GITKB_PACKET"]))
assert "Copy, do not invent" in open(os.environ["GITKB_BRIEF"]).read()
out = os.environ["GITKB_OUT"]
mode = sys.argv[1]
if mode == "thin":
    json.dump({"skipped": "packet too thin", "missing": ["payload.mechanism"]},
              open(os.path.join(out, "report.json"), "w"))
else:
    json.dump({"id": packet["target"]["id"], "schema": "clean-1.3"},
              open(os.path.join(out, "record.json"), "w"))
"""


def test_external_distiller(tmp_path, store):
    trace = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    script = tmp_path / "distiller.py"
    script.write_text(DISTILLER)
    thin = mine(trace, store=store, distiller=f"{sys.executable} {script} thin")
    assert {o.note for o in thin.outcomes} == {"packet too thin"}
    bad = mine(trace, store=store, distiller=f"{sys.executable} {script} bad")
    assert all(o.action == "skip" and "refused by the gates" in o.note for o in bad.outcomes)
    assert not store.view().entries()
    with pytest.raises(GitkbError, match="command not found"):
        mine(trace, store=store, distiller="no-such-distiller-command")


def test_mined_store_push_is_gated_by_the_server_hook(tmp_path, monkeypatch):
    from test_hooks import put_git_kb_on_path

    put_git_kb_on_path(tmp_path, monkeypatch)
    server = tmp_path / "server.git"
    Store.init(server, bare=True)
    done = kb("hooks", "install", "--server", str(server))
    if done.returncode != 0:
        pytest.skip("server hook installation is not available: " + done.stderr.decode())
    git("clone", "-q", f"file://{server}", str(tmp_path / "work"))
    work = Store.open(tmp_path / "work")
    mine(legacy_trace(tmp_path / "kernel_opt_001_softmax"), store=work)
    refspecs = ["main", "refs/kb/traces/*:refs/kb/traces/*"]
    pushed = git("push", "--porcelain", "origin", *refspecs, cwd=work.location, check=False)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    strategy = next(e for e in work.view().entries() if e["type"] == "strategy")
    path = work.location / strategy["path"]
    data = json.loads(path.read_text())
    data["worth"]["gain"]["pct"] = data["worth"]["gain"]["metrics"][0]["delta_pct"] = 87.6543
    path.write_text(json.dumps(data, indent=1) + "\n")
    git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-am", "tamper", cwd=work.location)
    refused = git("push", "--porcelain", "origin", "main", cwd=work.location, check=False)
    assert refused.returncode != 0


def test_a_trace_without_metadata_names_its_operator_from_the_kernel(tmp_path, store):
    """Only kernel.py history and memory, hardware from flags: the operator comes from the
    kernel's entry point (or --operator), never the trace label, so the stated dead-ends
    are not refused by raw-isolation for echoing the label."""
    t = Trace(tmp_path / "rmsnorm")
    source = kernel_source(0).replace("softmax_kernel", "fused_rms_norm_kernel")
    t.legacy_keep(0, 100.0, "baseline: one program per row, three passes", kernel=source)
    t.legacy_revert(
        1,
        110.0,
        "slower",
        [
            "a persistent grid on sm_90 was slower because the grid-stride loop adds index "
            "math to every row of the rmsnorm",
            "BLOCK 8192 spills registers on sm_90 because each thread holds 64 fp32 values",
        ],
    )
    t.legacy_keep(2, 80.0, "two rows per program", kernel=source.replace("axis=0)", "axis=0) "))
    t.write()
    done = kb("mine", str(t.path), "--store", str(store.location), "--arch", "hopper", "--json")
    assert done.returncode == 0, done.stderr.decode()
    summary = json.loads(done.stdout)
    assert {o["seg_id"]: o["action"] for o in summary["outcomes"]} == {
        "strategy-v2": "insert",
        "anti-v1-01": "insert",
        "anti-v1-02": "insert",
        "refk-final": "insert",
    }
    families = {
        e["id"].split(".")[3] for e in store.view().entries() if e["type"] != "anti-strategy"
    }
    assert families == {"fused-rms-norm"}
    # The folder's name is a word of the trace's own text: gitkb named the trace itself.
    label = summary["label"]
    assert label.startswith("kernel_opt_fused_rms_norm_") and "rmsnorm" in summary["label_note"]
    assert label.encode() in done.stderr
    recon = json.loads(store.repo.read(store.tip, f"reports/{label}/recon.json"))
    assert recon["identity"]["operator_basis"] == "the kernel's entry point"
    # An explicit label inside the operator's name would be echoed by every record: refused.
    other = tmp_path / "clone"
    git("clone", "-q", str(t.path), str(other))
    done = kb("mine", str(other), "--store", str(store.location), "--arch", "hopper",
              "--label", "rms")  # fmt: skip
    assert done.returncode == 2 and b"--label" in done.stderr


def test_mega_milestones_yield_snapshot_reference_kernels(tmp_path, store):
    """Each mega milestone with a versions/kernel_v<N>.py snapshot (read from the commits)
    is a reference kernel of its own, besides the terminal one."""
    t = Trace(tmp_path / "kernel_opt_001_softmax")
    t.setup()
    t.legacy_keep(0, 100.0, "baseline softmax with three passes over each row")
    t.legacy_keep(1, 70.0, "merge the max and sum loops with an online rescale", pct="+30%")
    t.legacy_keep(2, 50.0, "vectorized 128-bit loads along the row", pct="+28.6%")
    t.legacy_keep(3, 49.0, "num_warps 8", pct="+2%")
    snapshot = kernel_source(1).replace("# step 1", "# snapshot of v1, from /home/ann/k.py")
    t.commit("archive milestone snapshots", {"versions/kernel_v1.py": snapshot})
    t.write()
    result = mine(t.path, store=store)
    refs = {o.seg_id: o for o in result.outcomes if o.record_type == "reference-kernel"}
    assert sorted(refs) == ["refk-final", "refk-v1"]  # v2 is a mega without a snapshot
    record = store.read_record(refs["refk-v1"].record_id).data
    assert record["id"].endswith(".reference-impl-milestone1-r02")
    snippet = record["payload"]["implementation"]["snippet"]
    assert "# snapshot of an earlier step, from a local path" not in snippet
    assert "# snapshot of v1, from a local path" in snippet and "ann" not in snippet
    assert record["evidence"]["raw"]["version"] == "v1"
    assert kb("validate", str(store.location)).returncode == 0


def test_non_target_kernels_come_from_the_store_config_or_the_flag(tmp_path, store):
    t = Trace(tmp_path / "kernel_opt_011_softmax")
    t.setup()
    t.legacy_keep(0, 100.0, "baseline softmax with three passes over each row")
    t.profile(0, "softmax_kernel")
    t.write()

    def usable(*flags) -> int:
        done = kb("recon", str(t.path), "--json", "--store", str(store.location), *flags)
        assert done.returncode == 0, done.stderr.decode()
        return json.loads(done.stdout)["captures"]["usable"]

    assert usable() == 1
    assert usable("--non-target-kernel", "softmax_kernel") == 0
    config = store.location / "gitkb.toml"
    config.write_text(config.read_text() + '\n[mine]\nnon_target_kernels = ["softmax_kernel"]\n')
    git("-c", "core.hooksPath=/dev/null", "commit", "-qam", "config", cwd=store.location)
    assert usable() == 0
    assert usable("--non-target-kernel", "some_other_kernel") == 1  # the flag wins
    result = mine(t.path, store=store)
    stored = json.loads(store.repo.read(store.tip, "traces/kernel_opt_011_softmax.json"))
    assert stored["non_target_kernels"] == ["softmax_kernel"]  # the gates rebuild the same
    assert result.ingest.captures[0].reason == "captured softmax_kernel, a non-target kernel"


def test_traces_of_one_kernel_at_other_shapes_meet_in_the_store(tmp_path, store):
    """docs/trace-format.md §4.3 merge rules: fused_add_rmsnorm_h4096 and rmsnorm_h2048 share the
    operator family, so the second trace sees the first's records (coverage, ids) and a
    lesson both state is confirmed, not inserted twice."""
    for number, name in ((1, "fused_add_rmsnorm_h4096"), (2, "rmsnorm_h2048")):
        t = Trace(tmp_path / f"kernel_opt_{number:03d}_{name}")
        t.setup(name=name, description="RMSNorm of each row, optionally after a residual add")
        t.legacy_keep(0, 100.0, "baseline with three passes over each row")
        t.legacy_revert(1, 120.0, "slower", [SPILL_DEADEND])
        t.write()
        result = mine(t.path, store=store)
    assert result.ingest.meta.operator_slug == "rmsnorm-and-fused-add-rmsnorm"
    coverage = result.recon["store_coverage"]["by_source_repo"]
    assert list(coverage) == ["kernel_opt_001_fused_add_rmsnorm_h4096"]
    assert {o.seg_id: o.action for o in result.outcomes}["anti-v1-01"] == "confirm"
    families = {e["retrieval"]["scope"]["operator_family"] for e in store.view().entries()}
    assert families == {"rmsnorm-and-fused-add-rmsnorm"}
