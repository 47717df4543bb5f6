"""Mining stages on real trace repositories: the 32 edge cases of docs/trace-format.md §8 and
its rules 1-10, one test (or one parametrized case) each."""

from __future__ import annotations

import json

import pytest
from helpers import example_files

from gitkb.mine.distill.builtin import distill
from gitkb.testing.trace_builder import Trace
from gitkb.testing.trace_files import LONG_HORIZON_AUTHOR, Symlink, kernel_source, memory
from gitkb.testing.traces import legacy_trace, long_horizon_trace
from gitkb.trace import TraceError
from gitkb.trace.ingest import ingest
from gitkb.trace.ladder import build_ladder
from gitkb.trace.messages import parse_deadends
from gitkb.trace.naming import entry_point, operator_slug
from gitkb.trace.options import TraceOptions
from gitkb.trace.packets import build_packets, find_packet
from gitkb.trace.partition import partition, strategy_technique
from gitkb.trace.scrub import Scrubber
from gitkb.vcs.repository import Repository


def run(path, label=None, **options):
    repo = Repository.open(path)
    tip = repo.resolve("HEAD")
    label = label or path.name
    ingested = ingest(repo, tip, label, TraceOptions(**options))
    ladder = build_ladder(ingested.rows)
    return ingested, ladder, partition(ingested, ladder)


def promoted(ladder, n):
    return ladder.kind(n) in ("milestone", "mega")


def seg_ids(segments):
    return [s.seg_id for s in segments]


def start(tmp_path, name="kernel_opt_001_softmax", **setup) -> Trace:
    t = Trace(tmp_path / name)
    t.setup(**setup)
    return t


# --------------------------------------------------------------------------- the ladder


def test_legacy_trace_ladder_segments_and_ids(tmp_path):
    _ingested, ladder, segments = run(legacy_trace(tmp_path / "kernel_opt_001_softmax"))
    kinds = {s.version: s.kind for s in ladder.steps}
    assert kinds == {
        "v0": "baseline",
        "v1": "mega",
        "v2": "deadend",
        "v3": "mega",
        "v4": "rejected",
        "v5": "deadend",
        "v6": "milestone",
    }
    assert ladder.final == 6
    assert seg_ids(segments) == [
        "strategy-v1",
        "strategy-v3",
        "strategy-v6",
        "anti-v2-01",
        "anti-v2-02",
        "anti-v5-01",
        "pitfall-v3-01",
        "pitfall-v3-02",
        "refk-final",
    ]
    ids = [s.id for s in segments]
    assert ids[0].startswith("nvidia.h100.triton.softmax.") and ids[0].endswith("-s01")
    # named by the operator, not "misc"
    assert ids[3].startswith("nvidia.h100.triton.softmax.anti.") and ids[3].endswith("-t01")
    assert ids[-1].endswith("-r01")


def test_edge_1_pure_long_horizon_promotions_are_milestones(tmp_path):
    ingested, ladder, _segments = run(long_horizon_trace(tmp_path / "kernel_opt_002_softmax"))
    milestones = [s.version for s in ladder.milestones]
    assert milestones == ["v0", "v1", "v2", "v4"]
    promoted = ingested.row(2)
    assert promoted.code_sha == promoted.event_sha  # the squash commit carries the code
    assert promoted.journal_path == "memory/long_horizon_e0001.json"


def test_edge_2_two_commit_v0_v1_take_code_from_the_code_commit(tmp_path):
    path = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    repo = Repository.open(path)
    packets = build_packets(repo, repo.resolve("HEAD"), path.name)
    v1 = next(p for p in packets if p.seg_id == "strategy-v1")
    assert v1.diff and "+" in v1.diff
    subject = repo.commit(v1.provenance["git_commit"]).subject
    assert subject.startswith("v1: framework baseline")


def test_edges_3_and_25_carry_forward_is_never_a_milestone_or_final(tmp_path):
    t = start(tmp_path)
    t.v0_two_commit(200.0)
    t.v1_two_commit(100.0)
    t.non_promotion(2, 1, "pivot", "v1", 100.0)
    t.non_promotion(3, 2, "candidate_ready", "v1", 100.0)
    t.worktree(".atrex_long_horizon/episodes/e0002/attempt.json", {"latency": 50.0})
    ingested, ladder, segments = run(t.write())
    assert ingested.row(3).carry_forward and ingested.row(3).correctness == "PASS"
    assert ladder.final == 1
    assert [s.seg_id for s in segments if s.record_type == "strategy"] == ["strategy-v1"]


def test_edge_4_exact_tie_is_not_a_new_best(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_keep(1, 80.0, "online rescale of the running sum", pct="+20%")
    t.legacy_keep(2, 80.0, "renamed the loop variables for clarity", pct="+0.0%")
    _ingested, ladder, segments = run(t.write())
    step = next(s for s in ladder.steps if s.version == "v2")
    assert step.kind == "rejected" and "0.00%" in step.reason
    assert "strategy-v2" not in seg_ids(segments)


def test_edge_5_reverted_counts_in_subject_or_verdict_line_only(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_keep(
        1,
        80.0,
        "online rescale of the running sum",
        pct="+20%",
        body="An earlier attempt was reverted, this one keeps the rescale.",
    )
    t.legacy_keep(
        2, 70.0, "vectorized loads along the row", pct="+12%", body="Verdict: reverted after review"
    )
    ingested, ladder, _ = run(t.write())
    assert not ingested.row(1).reverted
    assert promoted(ladder, 1)
    assert ingested.row(2).reverted


def test_edge_6_infra_words_in_prose_do_not_reject(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_keep(
        1,
        80.0,
        "online rescale, tested in the sandbox first",
        pct="+20%",
        body="TMA unavailable on sm_80, so plain loads are used.",
    )
    t.legacy_revert(2, None, "sandbox outage")
    _ingested, ladder, _ = run(t.write())
    assert promoted(ladder, 1)
    assert next(s for s in ladder.steps if s.n == 2).reason == "infrastructure"


def test_edge_6_long_horizon_blocked_is_infrastructure(tmp_path):
    _, ladder, _ = run(long_horizon_trace(tmp_path / "kernel_opt_002_softmax"))
    assert next(s for s in ladder.steps if s.version == "v5").reason == "infrastructure"


def test_edge_7_no_change_phrase_moves_the_floor_but_claims_nothing(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_keep(1, 68.75, "no improvement expected, re-measured", pct="+31.25%")
    t.legacy_keep(2, 68.0, "online rescale of the running sum", pct="+1.1%")
    _, ladder, _ = run(t.write())
    step = next(s for s in ladder.steps if s.n == 1)
    assert step.kind == "rejected" and step.reason == "declares no change"
    assert next(s for s in ladder.steps if s.n == 2).kind == "rejected"  # under 1.5% of 68.75


def test_edge_8_technique_slug_never_collapses_to_numbers(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "")
    t.commit(
        "v12: committed (flat-within-noise, +0.04%)",
        {
            "kernel.py": kernel_source(12),
            "memory/v12.json": memory("v12", 90.0, category="vectorized_load"),
        },
    )
    ingested, _, _ = run(t.write())
    assert strategy_technique(ingested.row(12), ingested.scrubber) == "vectorized-load"


def test_edge_9_both_pitfall_dialects_strings_and_nulls(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_keep(
        1,
        80.0,
        "online rescale of the running sum",
        pct="+20%",
        pitfalls=[
            {
                "error_type": "accuracy",
                "error_message": "fp16 accumulation overflowed on sm_90",
                "root_cause": "because the running sum exceeds 65504 for rows of 8192 columns",
                "fix_applied": "accumulate in fp32",
                "lesson": "keep fp32 accumulators",
            },
            "short",
            None,
            7,
        ],
    )
    _, _, segments = run(t.write())
    pitfalls = [s for s in segments if s.seg_kind == "curated-pitfall"]
    assert [s.seg_id for s in pitfalls] == ["pitfall-v1-01"]
    assert "65504" in pitfalls[0].text and pitfalls[0].fix == "accumulate in fp32"


@pytest.mark.parametrize(
    "message, items, next_direction",
    [
        ("v3: reverted (slower) — dead-end recorded", [], ""),  # edge 10: prose form
        (
            "v3: reverted (x) — dead-end recorded: tile (64, 128) spills badly, "
            "split-K [2, 4] regresses. Extra words. Next: try TMA",
            ["tile (64, 128) spills badly", "split-K [2, 4] regresses"],
            "try TMA",
        ),  # edge 11
    ],
)
def test_edges_10_11_dead_end_lists(message, items, next_direction):
    found, _, direction = parse_deadends(message)
    assert found == items and direction == next_direction


@pytest.mark.slow
@pytest.mark.parametrize(
    "hardware, framework_arch, expected",
    [
        ("NVIDIA GB200", None, ("nvidia", "blackwell", "gb200")),
        (["LOCAL", "B200"], None, ("nvidia", "blackwell", "b200")),
        ("LOCAL", "sm_100", ("nvidia", "blackwell", None)),
        (None, "gfx942", ("amd", "cdna3", None)),
    ],
)
def test_edge_12_hardware_tokens(tmp_path, hardware, framework_arch, expected):
    t = start(tmp_path, hardware=hardware, framework_arch=framework_arch)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    ingested, _, _ = run(t.write())
    meta = ingested.meta
    assert (meta.vendor, meta.arch, meta.product) == expected


def test_edge_12_no_hardware_fails_naming_the_flags_and_flags_override(tmp_path):
    t = start(tmp_path, hardware="LOCAL")
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    path = t.write()
    with pytest.raises(TraceError, match="--vendor/--arch/--product"):
        run(path)
    ingested, _, _ = run(path, arch="cdna3")
    assert (ingested.meta.vendor, ingested.meta.arch) == ("amd", "cdna3")
    ingested, _, _ = run(path, product="h100")
    assert (ingested.meta.vendor, ingested.meta.product) == ("nvidia", "h100")


def test_edge_13_native_workspace_takes_the_operator_from_the_kernel_not_the_label(tmp_path):
    """Rule 12: no definition.json, so the kernel's entry point names the operator (the
    folder name is the trace label, which must never reach a served field)."""
    t = Trace(tmp_path / "kernel_opt_fused_moe_gate_triton_b200_production")
    t.setup(definition=False, hardware="B200")
    t.legacy_keep(0, 100.0, "baseline", kernel=kernel_source(0).replace("softmax", "moe_gate"))
    ingested, _, _ = run(t.write())
    meta = ingested.meta
    assert (meta.operator_slug, meta.operator_basis) == ("moe-gate", "the kernel's entry point")
    assert meta.workload_family == "moe" and meta.n_shapes == 0
    ingested, _, _ = run(t.path, operator="fused_add_rmsnorm_h4096")
    assert ingested.meta.operator_slug == "rmsnorm-and-fused-add-rmsnorm"


@pytest.mark.parametrize(
    "name, slug",
    [
        ("kernel_opt_001_attention_backward", "attn-bwd"),
        ("fused_add_rmsnorm_h4096", "rmsnorm-and-fused-add-rmsnorm"),
        ("rmsnorm_h2048", "rmsnorm-and-fused-add-rmsnorm"),
        ("gqa_paged_decode_h32_kv8_d128_ps1", "gqa-paged-decode"),
        ("mla_paged_prefill_causal_h16", "mla-paged-prefill-causal"),
        ("gemm_n4096_k1024", "dense-gemm-shape-sweep"),
        ("-root-work-kernel-opt-007-layer_norm", "layer-norm"),
        ("tmp_data_softmax_with_the_mask", "softmax-mask"),
        (
            "multihead_attention_forward_projection_of_the_sequence_embedding",
            "mha-attn-fwd-proj-seq",
        ),
        ("007", "unknown"),
    ],
)
def test_operator_slugs_follow_the_format_section_4(name, slug):
    assert operator_slug(name) == slug


@pytest.mark.parametrize(
    "source, declared, expected",
    [
        ("@triton.jit\ndef rmsnorm_fwd_kernel(x):\n    pass\ndef run(x):\n    pass\n", None,
         "rmsnorm_fwd"),
        ("@gluon.jit\n@other\ndef kernel_layer_norm(x):\n    pass\n", None, "layer_norm"),
        ('src = """__global__ void softmax_rows(float* x) {}"""\n', None, "softmax_rows"),
        ("class Model:\n    pass\ndef run():\n    pass\n", "kernel.py::run", None),
        ("def run():\n    pass\n", "kernel.py::fused_gelu", "fused_gelu"),
    ],
)  # fmt: skip
def test_entry_point_names_the_operator(source, declared, expected):
    assert entry_point(source, declared) == expected


def test_edge_14_capture_usability(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.profile(0, "softmax_kernel")
    t.profile(0, "?", suffix="unknown")
    t.profile(
        0,
        "void at::native::distribution_elementwise_grid_stride_kernel<float, 4>(int)",
        suffix="rng",
    )
    t.commit("v0: amd capture", {"profiles/v0_amd/pmc/counters.csv": "a,b\n1,2\n"})
    ingested, _, _ = run(t.write())
    usable = {c.dir: c.usable for c in ingested.captures}
    assert usable == {
        "profiles/v0": True,
        "profiles/v0_amd": False,
        "profiles/v0_rng": False,
        "profiles/v0_unknown": False,
    }


def test_edge_15_git_excluded_profiles_are_not_citable(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.worktree("profiles/episode_1/summary.txt", "Kernel: softmax_kernel\n")
    t.worktree("profiles/v0/summary.txt", "Kernel: softmax_kernel\n")
    ingested, _, _ = run(t.write())
    assert ingested.captures == []


def test_edges_16_17_scrubbing():
    scrub = Scrubber(("acme-cluster",))
    text = scrub.text(
        "v3: fixed after 5d1c0a7e on acme-cluster by ann@b.example.com in /home/ann/x.py, "
        "see notes.md; 12345678 stays, abc1234 and 5d1c0a7e2b3c stay; Tesla V100; v2 and v3"
    )
    assert text.startswith("fixed after shape-1 on a private identifier")
    for gone in ("5d1c0a7e ", "acme", "ann@b", "/home", "notes.md", "v2", "v3"):
        assert gone not in text
    for kept in ("12345678", "abc1234", "5d1c0a7e2b3c", "V100"):
        assert kept in text
    assert scrub.text("float4 v4 vec loads") == "float4 v4 vec loads"


def test_edge_18_dsl_sniffing(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline", kernel="# a gluon port is planned\nimport triton\n")
    t.legacy_keep(1, 80.0, "flydsl port", pct="+20%", kernel="import flydsl\n")
    t.commit("v2: metadata", {"memory/v2.json": memory("v2", 79.0), "kernel.py": None})
    t.legacy_keep(3, 70.0, "back to triton", pct="+11%")
    ingested, _, _ = run(t.write())
    assert [r.dsl for r in ingested.rows] == ["triton", "flydsl", "any", "triton"]
    ingested, _, _ = run(t.path, dsl="cutedsl")
    assert {r.dsl for r in ingested.rows} == {"cutedsl"}


def test_edges_19_to_24_robust_memory(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline", by_shape={"a": 50.0, "b": None, "c": "n/a", "d": 200.0})
    t.commit("v1: list memory", {"kernel.py": kernel_source(1), "memory/v1.json": [1, 2]})
    bad = memory("v2", 80.0)
    bad["correctness"] = "PASS"
    bad["performance"]["latency_us_geomean"] = 0.0
    t.commit("v2: odd types", {"kernel.py": kernel_source(2), "memory/v2.json": bad})
    t.commit("v3: not utf8", {"kernel.py": kernel_source(3), "memory/v3.json": b"\xff\xfe{"})
    masked = memory("v4", 70.0, masked=True, git_commit_hash=12345678)
    t.commit("v4: masked", {"kernel.py": kernel_source(4), "memory/v4.json": masked})
    template = {"version": "v5", "performance": {"latency_us": 60.0}}
    t.commit("v5: template", {"kernel.py": kernel_source(5), "memory/v5.json": template})
    t.commit(
        "v6: variants",
        {
            "memory/v6_rerun.json": {},
            "memory/v71_512.json": {},
            "memory/v0.failed.json": {},
            "memory/live.json": {},
            "memory/V3.json": {},
        },
    )
    ingested, ladder, _ = run(t.write())
    v0, v1, v2, v3, v4, v5 = (ingested.row(n) for n in range(6))
    assert v0.by_shape == [("a", 50.0), ("d", 200.0)] and v0.problems
    assert v1.geomean is None and "list" in v1.problems[0]
    assert v2.geomean is None and v2.correctness is None
    assert v3.geomean is None and "UTF-8" in v3.problems[0]
    assert v4.geomean == 70.0 and v4.masked and v4.git_commit_hash == "12345678"
    assert v5.geomean is None and "latency_us" in v5.problems[0]
    assert promoted(ladder, 4)
    variants = {v["file"]: (v["base"], v["suffix"]) for v in ingested.variants}
    assert variants == {
        "memory/v6_rerun.json": ("v6", "rerun"),
        "memory/v71_512.json": ("v71", "512"),
    }
    reasons = {f["file"]: f["reason"] for f in ingested.non_version_files}
    assert reasons == dict.fromkeys(
        ("memory/v0.failed.json", "memory/live.json", "memory/V3.json"), "not a version name"
    )
    assert ingested.row(71) is None and not ingested.row(6).has_memory


@pytest.mark.slow
def test_edge_26_packets_come_from_objects_not_the_work_tree(tmp_path):
    path = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    repo = Repository.open(path)
    before = build_packets(repo, repo.resolve("HEAD"), path.name)
    (path / "kernel.py").write_text("print('edited in the work tree')\n")
    (path / "memory").mkdir(exist_ok=True)
    (path / "memory" / "v9.json").write_text(json.dumps(memory("v9", 1.0)))
    after = build_packets(repo, repo.resolve("HEAD"), path.name)
    assert [p.as_json() for p in before] == [p.as_json() for p in after]


def test_edge_27_id_allocation_and_comparability(tmp_path):
    path = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    repo = Repository.open(path)
    existing = (
        "nvidia.h100.triton.softmax.old-trick-s07",
        "nvidia.h100.triton.softmax-v2.other-operator-s40",  # substring of another slug
        "nvidia.h100.triton.softmax.anti.old-pitfall-t03",
    )
    packets = build_packets(
        repo,
        repo.resolve("HEAD"),
        path.name,
        TraceOptions(existing_ids=existing, store_sources=("(unrecorded)",)),
    )
    assert packets[0].target["id"].endswith("-s08")
    assert next(p for p in packets if p.seg_id == "anti-v2-01").target["id"].endswith("-t04")
    assert packets[0].agent_facing["measurements"]["comparable_with_the_store"] is False


@pytest.mark.slow
def test_edge_28_only_kernel_py_is_diffed_and_truncation_keeps_verbatim(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    huge = kernel_source(1) + "".join(
        f"    table_{i} = {i} * scale + offset_{i}\n" for i in range(3000)
    )
    t.commit(
        "v1: committed (+20%)",
        {
            "kernel.py": huge,
            "helper.py": "x = 1\n",
            "memory/v1.json": memory("v1", 80.0, description="bigger lookup table"),
        },
    )
    path = t.write()
    repo = Repository.open(path)
    packet = build_packets(repo, repo.resolve("HEAD"), path.name)[0]
    assert len(packet.diff) <= 60_000 and "helper.py" not in packet.diff
    record = distill(packet).record
    code = " ".join(packet.code.split())
    for line in record["payload"]["implementation"]["snippet"].splitlines():
        assert " ".join(line.split()) in code


def test_edge_29_failing_correctness_dead_end_and_short_text(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_revert(
        1,
        120.0,
        "wrong results",
        ["fp16 accumulators overflow on rows of 8192 columns because sums exceed 65504"],
        correctness="FAIL",
    )
    t.legacy_revert(2, 120.0, "meh", correctness="FAIL")
    _, ladder, segments = run(t.write())
    assert ladder.kind(1) == "deadend"
    assert next(s for s in ladder.steps if s.n == 2).reason == "reverted, nothing said"
    assert seg_ids(segments) == ["anti-v1-01", "refk-final"]


def test_edge_30_long_horizon_absolute_paths_never_reach_a_packet(tmp_path):
    path = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    repo = Repository.open(path)
    for packet in build_packets(repo, repo.resolve("HEAD"), path.name):
        assert "/home/" not in json.dumps(packet.agent_facing)


def test_edge_31_uncommitted_evaluations_are_ignored(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.legacy_keep(1, 80.0, "online rescale of the running sum", pct="+20%")
    path = t.write()
    repo = Repository.open(path)
    before = [p.as_json() for p in build_packets(repo, repo.resolve("HEAD"), path.name)]
    runtime = path / ".atrex_long_horizon" / "episodes" / "e0001" / "episode_runtime"
    runtime.mkdir(parents=True)
    (runtime / "evaluations.jsonl").write_text('{"schema_version": 1, "result": {"x": 1.0}}\n')
    after = [p.as_json() for p in build_packets(repo, repo.resolve("HEAD"), path.name)]
    assert before == after


@pytest.mark.slow
def test_edge_32_symlinks_and_oversized_files_are_refused(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    t.commit(
        "v0: profiles",
        {
            "profiles/v0_link": Symlink("/etc"),
            "profiles/v0/summary.txt": b"Kernel: softmax_kernel\n" + b"x" * (9 * 1024 * 1024),
            "profiles/v0/analysis/metrics_key_run.json": {"__kernel_name__": "softmax_kernel"},
        },
    )
    ingested, _, _ = run(t.write())
    assert not any(c.usable for c in ingested.captures)
    refused = " ".join(ingested.refused)
    assert "8 MiB" in refused and "profiles/v0_link" in refused


def test_rule_1_metadata_only_commit_never_replaces_the_code_event(tmp_path):
    t = start(tmp_path)
    t.legacy_keep(0, 100.0, "baseline kernel with three passes")
    code = t.legacy_keep(1, 80.0, "online rescale of the running sum", pct="+20%")
    assert code
    t.commit("v1: pin memory hash", {"memory/v1.json": memory("v1", 79.0, description="pinned")})
    ingested, _, _ = run(t.write())
    row = ingested.row(1)
    repo = Repository.open(t.path)
    assert repo.commit(row.code_sha).subject.startswith("v1: committed")
    assert row.geomean == 79.0  # numbers: the newest committed memory


@pytest.mark.slow
def test_bare_clone_mines_the_same(tmp_path):
    path = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    bare = tmp_path / "kernel_opt_002_softmax.git"
    import subprocess

    subprocess.run(["git", "clone", "-q", "--bare", str(path), str(bare)], check=True)
    a, b = Repository.open(path), Repository.open(bare)
    pa = build_packets(a, a.resolve("HEAD"), "kernel_opt_002_softmax")
    pb = build_packets(b, b.resolve("HEAD"), "kernel_opt_002_softmax")
    assert [p.as_json() for p in pa] == [p.as_json() for p in pb]


def test_find_packet_by_id_then_episode_key_then_version(tmp_path):
    path = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    repo = Repository.open(path)
    packets = build_packets(repo, repo.resolve("HEAD"), path.name)
    anti = next(p for p in packets if p.seg_id == "anti-v2-02")
    raw = {"source_repo": path.name, "version": "v2"}
    record = {
        "id": "elsewhere-t09",
        "episode_key": anti.target["episode_key"],
        "evidence": {"raw": raw},
    }
    assert find_packet(packets, record) is anti
    record["episode_key"] = "no|such|key"
    assert find_packet(packets, record).seg_id == "anti-v2-01"
    record["id"] = anti.target["id"]
    assert find_packet(packets, record) is anti
    assert find_packet(packets, {"id": "x", "evidence": {"raw": {}}}) is None


def test_long_horizon_granular_evidence(tmp_path):
    path = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    repo = Repository.open(path)
    packets = {p.seg_id: p for p in build_packets(repo, repo.resolve("HEAD"), path.name)}
    promoted = packets["strategy-v2"].evidence_extra
    assert promoted["journal"] == "memory/long_horizon_e0001.json"
    assert promoted["experiments"] == [1]
    assert repo.commit(promoted["promotion_commit"]).author.startswith("atrex-long-horizon")
    rejected = packets["anti-v3-01"].evidence_extra
    assert rejected["journal"] == "memory/v3.json" and rejected["experiments"] == [1]
    assert packets["strategy-v1"].evidence_extra is None
    assert LONG_HORIZON_AUTHOR.startswith("atrex")


def test_scoring_reproduces_the_example_records_ranks():

    from gitkb.record.worth import rank

    for path in example_files():
        record = json.loads(path.read_text())
        expected = record["worth"]["rank"]
        assert {k: rank(record)[k] for k in ("score", "tier")} == {
            "score": expected["score"],
            "tier": expected["tier"],
        }, path.name


def test_journal_anti_strategy_is_distilled_from_the_experiment(tmp_path):
    path = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    repo = Repository.open(path)
    packet = next(
        p for p in build_packets(repo, repo.resolve("HEAD"), path.name) if p.seg_id == "anti-v3-01"
    )
    result = distill(packet)
    payload = result.record["payload"]
    assert payload["hypothesis"] == "bulk copies hide the load latency"
    assert payload["established_fact"]["condition"]["sm_arch"] == "sm_100"
    assert "payload.hypothesis" not in result.missing
