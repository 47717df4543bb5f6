"""git kb import geak: GEAK kb_artifacts trees, written here by a fixture builder."""

from __future__ import annotations

import json

import pytest
from helpers import kb
from helpers.geak_entries import DIFF, meta, write_entry
from helpers.geak_trees import entry

from gitkb.importers import import_tree
from gitkb.trace import techniques
from gitkb.warmstart.attest import read_ledger
from gitkb.warmstart.resolve import resolve
from gitkb.warmstart.retract import unretract

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

GOOD_MECHANISM = (
    "On gfx942 a block of 4096 fp32 values per program exceeds the 512 VGPR budget of a "
    "wavefront, so the compiler spills to scratch memory and every spilled value costs a "
    "round trip through the vector L1 cache."
)


def test_patch_entries_become_gate_valid_strategies(store, tmp_path):
    root = tmp_path / "kb_artifacts"
    write_entry(root)
    other = DIFF.replace('"evict_first"', '"evict_last"')
    write_entry(root, exp_id="20250602_090000_0f0f0f", diff=other, as_json=True)
    report = import_tree("geak", store, tmp_path)
    assert report.imported == 2 and report.skipped == [] and report.commit == store.tip
    info = store.repo.commit(report.commit)
    assert info.subject == "kb import geak:kb_artifacts"
    assert dict(info.trailers)["KB-Source"] == "geak"
    record = json.loads(
        store.read_record("amd.gfx942.triton.rmsnorm.geak-20250601-101500-a1b2c3").raw
    )
    assert record["retrieval"]["scope"]["arch"] == "cdna3"
    assert record["retrieval"]["scope"]["product"] == "gfx942"
    assert record["payload"]["implementation"]["snippet"] == DIFF
    assert record["worth"]["gain"]["basis"] == "measured" and record["worth"]["gain"]["pct"] == 20.0
    assert record["evidence"]["raw"]["bench_key"] == "bk:rmsnorm-suite"
    assert record["evidence"]["raw"]["geak"]["verified_stack"]["rocm"] == "6.4"
    text = json.dumps(record)
    assert "alice" not in text and "/home/" not in text and "source_eval_dir" not in text
    assert "evict-first keeps" not in text or "bandwidth-bound" in record["payload"]["mechanism"]
    validated = kb("validate", str(store.location))
    assert validated.returncode == 0, validated.stdout.decode()
    answer = resolve(store, "triton_rmsnorm.py", product="gfx942")
    assert answer["read_reason"] == "read" and len(answer["ranks"]) == 1  # one direction
    assert len(answer["ranks"][0]["alternates"]) == 1
    assert answer["ranks"][0]["bench_key"] == "bk:rmsnorm-suite"


def test_attestations_become_ledger_lines(store, tmp_path):
    write_entry(tmp_path)
    import_tree("geak", store, tmp_path)
    record_id = store.list(type="strategy")[0]["id"]
    counts = read_ledger(store, record_id).counts()
    assert (counts["recalls"], counts["validations"], counts["failures"]) == (3, 2, 1)
    assert counts["last_by"] == "box-2"


def test_same_code_on_the_page_is_a_reproduction(store, tmp_path):
    write_entry(tmp_path)
    spaced = DIFF.replace("mask=cols < N", "mask = cols<N")
    write_entry(tmp_path, exp_id="20250605_120000_abcdef", diff=spaced)
    report = import_tree("geak", store, tmp_path)
    assert report.imported == 1 and len(report.reproductions) == 1
    record = json.loads(store.read_record(report.reproductions[0]["record"]).raw)
    assert record["worth"]["track"]["counters"]["verified_effective"] == 1
    again = import_tree("geak", store, tmp_path)
    assert again.commit is None and again.imported == 0 and again.reproductions == []


def test_entries_that_cannot_be_records_are_listed_with_the_reason(store, tmp_path):
    write_entry(tmp_path)
    bad = {
        "20250601_000001_000001": dict(
            gfx_dir="unknown", data=meta(gfx=None, metric={"speedup": 1.25})
        ),
        "20250601_000009_000009": dict(gfx_dir="gfx90a", slug="rmsnorm__triton__gfx90a"),
        "20250601_000002_000002": dict(data=meta(metric={"speedup": float("nan")})),
        "20250601_000004_000004": dict(data=meta(carrier="ptx_blob")),
        "20250601_000005_000005": dict(data=meta(carrier="tuned_artifact")),
        "20250601_000008_000008": dict(data=meta(metric={"speedup": "1.2x"})),
        "20250601_000006_000006": dict(diff=""),
        "20250601_000007_000007": dict(raw_meta="metric: [unclosed\n"),
        "20250601_000010_00000a": dict(slug="rmsnorm-no-language"),
    }
    for exp_id, options in bad.items():
        write_entry(tmp_path, exp_id=exp_id, **options)
    # What GEAK's resolve reads although its write gate would refuse it: a sub-unity
    # speedup (served under a lower --min-speedup) and a backlog exp id.
    write_entry(tmp_path, exp_id="20250601_000003_000003", data=meta(metric={"speedup": 0.97}),
                diff=DIFF.replace('"evict_first"', '"evict_last"'))  # fmt: skip
    write_entry(tmp_path, exp_id="2025-06-01-oops", diff=DIFF.replace("cols < N", "cols <= N"))
    report = import_tree("geak", store, tmp_path)
    reasons = {s["entry"].rsplit("/", 1)[-1]: s["reason"] for s in report.skipped}
    assert report.imported == 3 and len(reasons) == len(bad)
    assert "'unknown' is not a GEAK page" in reasons["20250601_000001_000001"]
    assert "files gfx90a as gfx90" in reasons["20250601_000009_000009"]
    assert "not a finite positive number" in reasons["20250601_000002_000002"]
    assert "unknown carrier" in reasons["20250601_000004_000004"]
    assert "no artifact" in reasons["20250601_000005_000005"]
    assert "'1.2x' is not a finite positive number" in reasons["20250601_000008_000008"]
    assert "empty diff" in reasons["20250601_000006_000006"]
    assert "unreadable" in reasons["20250601_000007_000007"]
    assert "<kernel>__<language>__<gfx>" in reasons["20250601_000010_00000a"]
    low = resolve(store, "triton_rmsnorm.py", product="gfx942", min_speedup=0.9)
    [rank] = low["ranks"]  # one direction
    assert [rank["speedup"]] + [a["speedup"] for a in rank["alternates"]] == [1.25, 1.25, 0.97]
    result = kb("import", "geak", str(tmp_path), "--store", str(store.location))
    assert result.returncode == 0 and b"skipped" in result.stdout


def test_retired_entries_are_deprecated_and_never_offered(store, tmp_path):
    write_entry(tmp_path, data=meta(retained=False, retired_reason="wrong on odd N"))
    report = import_tree("geak", store, tmp_path)
    record_id = store.list(type="strategy")[0]["id"]
    entry = store.view().entry(record_id)
    assert report.imported == 1 and entry["status"] == "deprecated" and entry["worth_score"] == 0
    assert read_ledger(store, record_id).open_retraction()["reason"] == "wrong on odd N"
    answer = resolve(store, "rmsnorm", arch="cdna3")
    assert answer["read_reason"] == "all_retired"
    unretract(store, record_id, "fixed and revalidated")
    assert store.view().entry(record_id)["status"] == "active"
    assert kb("validate", str(store.location)).returncode == 0


def test_dead_ends_must_pass_the_established_fact_gate(store, tmp_path):
    dead_ends = [
        {"what": "one program per 4096-wide row", "why": GOOD_MECHANISM},
        {"what": "persistent rows", "why": "flat within noise"},
    ]
    write_entry(tmp_path, data=meta(dead_ends=dead_ends))
    report = import_tree("geak", store, tmp_path)
    antis = store.list(type="anti-strategy")
    assert len(antis) == 1 and "one-program-per-4096-wide-row" in antis[0]["id"]
    assert len(report.skipped) == 1 and "(anti-strategy)" in report.skipped[0]["entry"]
    assert "mechanism" in report.skipped[0]["reason"]
    assert kb("validate", str(store.location)).returncode == 0


def test_not_a_geak_tree(store, tmp_path):
    (tmp_path / "empty").mkdir()
    result = kb("import", "geak", str(tmp_path / "empty"), "--store", str(store.location))
    assert result.returncode == 1 and b"no GEAK entries" in result.stderr


def _patch(before: str, after: str) -> str:
    path = "kernels/kernel.py"
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -10,1 +10,1 @@\n-{before}\n+{after}\n")  # fmt: skip


def test_geak_directions_map_onto_the_technique_vocabulary(store, tmp_path):
    root = tmp_path / "kb_artifacts"
    load = "    x = tl.load(x_ptr + cols, mask=cols < N)"
    evicted = load[:-1] + ', eviction_policy="evict_first")'
    launch = "    kernel[grid](x, out, N, BLOCK=BLOCK, num_warps={})"
    # (direction, its patch: None for one that changes a constant, no technique)
    entries = [
        ("Evict-First loads", _patch(load, evicted)),
        ("more warps per row", _patch(launch.format(4), launch.format(8))),
        # a fusion has no code signature: the direction's words name it beside any patch
        ("fold the residual add into the load loop", None),
        # words never vouch for a change the patch does not show
        ("num_warps 4 -> 8", None),
        # GEAK's own words, which the vocabulary does not know
        ("XCD-aware chiplet remap", None),
    ]
    for n, (direction, patch) in enumerate(entries, 1):
        entry(root, "gfx942", "rmsnorm", "triton", f"20250601_10000{n}_00000{n}", 1.2,
              direction, n, patch=patch)  # fmt: skip
    report = import_tree("geak", store, tmp_path)
    assert report.imported == len(entries) and report.skipped == []
    listed = kb("query", "--list-techniques", "--store", str(store.location))
    assert listed.returncode == 0, listed.stderr.decode()
    names = set(listed.stdout.decode().split())
    assert {"eviction-policy-evict-first", "num-warps-up", "fuse-into-load-loop"} <= names
    by_direction = {
        r["evidence"]["raw"]["direction"]: r
        for r in (store.read_record(e["id"]).data for e in store.list(type="strategy"))
    }
    keys = {d: techniques.record_technique(r).key for d, r in by_direction.items()}
    assert keys == {
        "Evict-First loads": "eviction-policy-evict-first",
        "more warps per row": "num-warps-up",
        "fold the residual add into the load loop": "fuse-into-load-loop",
        "num_warps 4 -> 8": "",
        "XCD-aware chiplet remap": "",
    }
    # an unknown direction stays verbatim: the record's change, its raw direction, its phrase
    unknown = by_direction["XCD-aware chiplet remap"]
    assert unknown["payload"]["change"] == "XCD-aware chiplet remap"
    assert techniques.record_technique(unknown).source == "none"
    assert not any("xcd" in name for name in names)
    asked = kb("query", "--technique", "num-warps-up", "--json", "--store", str(store.location))
    served = {r["id"] for r in json.loads(asked.stdout)["records"]}
    assert served == {by_direction["more warps per row"]["id"]}
