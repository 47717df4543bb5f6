"""A GEAK kb_artifacts tree, imported and resolved: the ranks GEAK's rules pick.

The tree holds one kernel (rmsnorm) on several gfx ids (gfx90a filed as GEAK files
it, under gfx90), in three languages, with cased and empty directions, string
speedups, opaque and missing bench keys, a mislabeled gpu_arch, retired and
retracted entries, byte-identical code under other paths and a tuned table. The
ranks below follow GEAK's rules (its experience store and kb/curate; the
side-by-side runs against GEAK itself are in importers/geak/test_export.py): page = gfx
folder + kernel + language, a mislabeled entry on neither page; retired
(retained: false or a reason; a ``lifecycle: retracted`` alone is still served)
dropped; floor; order by speedup, then reproductions, then the older exp id; one
rank per direction (trimmed and lowercased, an empty direction alone); comparable
only on a known, equal bench key; of two entries with the same code the higher
speedup is the record and the other its reproduction.
"""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import kb
from helpers.geak_entries import REPORT, meta

from gitkb.importers import import_tree
from gitkb.warmstart.resolve import resolve

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

SUITE = {"bench_key": "b2:rmsnorm-suite", "case_names": ["n4096", "n8192"]}


def diff(n: int, path: str = "kernels/rmsnorm.py", at: int = 10) -> str:
    """A patch whose changed code is entry ``n``'s own."""
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{at},2 +{at},2 @@ def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, N, BLOCK):\n"
        "     cols = tl.arange(0, BLOCK)\n"
        "-    x = tl.load(x_ptr + cols, mask=cols < N)\n"
        f"+    x = tl.load(x_ptr + cols, mask=cols < N, other={n}.0)\n"
    )


def entry(root, name, gfx, language, exp_id, speedup, direction, n, *, bench=None,
          gpu_arch=None, files=None, **fields):  # fmt: skip
    """One entry; ``bench``: the metric's bench_key/case_names (None: none stated)."""
    data = meta(
        language=language,
        gfx=gfx,
        direction=direction,
        reproductions=fields.pop("reproductions", 1),
        metric={"speedup": speedup, "gpu_arch": gpu_arch or gfx, **(bench or {})},
        attestations={},
        **fields,
    )
    folder = root / gfx / "norm" / f"{name}__{language}__{gfx}" / exp_id
    folder.mkdir(parents=True)
    (folder / "meta.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (folder / "report.md").write_text(REPORT)
    for rel, text in (files or {"patch.diff": diff(n)}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def geak_tree(tmp_path):
    root = tmp_path / "geak" / "kb_artifacts"
    e = lambda *a, **k: entry(root, "rmsnorm", *a, **k)  # noqa: E731
    # gfx942, triton: the page the caller reads.
    e("gfx942", "triton", "20250601_100000_aaaaaa", "1.45", "Evict-First loads", 1, bench=SUITE)
    e("gfx942", "triton", "20250602_100000_bbbbbb", 1.30, "evict-first  loads ", 2, bench=SUITE)
    e("gfx942", "triton", "20250603_100000_cccccc", "1.40", "", 3)  # no bench key at all
    e("gfx942", "triton", "20250604_100000_dddddd", 1.20, "", 4,
      bench={"bench_key": "b:opaque-harness"}, reproductions=None)  # fmt: skip
    e("gfx942", "triton", "20250605_100000_eeeeee", 20.0, "rewrite as persistent", 5,
      gpu_arch="gfx950", bench=SUITE)  # fmt: skip  # mislabeled: measured on gfx950
    e("gfx942", "hip", "20250606_100000_ffffff", 2.5, "LDS tiling", 6)
    e("gfx942", "ck", "20250607_100000_a0a0a0", 3.0, "xdl pipeline", 7)
    e("gfx942", "triton", "20250608_100000_b0b0b0", 1.90, "persistent rows", 8,
      retained=False, retired_reason="wrong results on odd N")  # fmt: skip
    e("gfx942", "triton", "20250609_100000_c0c0c0", 1.80, "split reduction", 9,
      lifecycle="retracted")  # fmt: skip  # taken back in GEAK
    e("gfx942", "triton", "20250610_100000_d0d0d0", 1.03, "vectorize", 10)  # under the floor
    # Entry 1's code again, from another workspace: a reproduction, not a new entry.
    e("gfx942", "triton", "20250611_100000_e0e0e0", 1.50, "evict-first loads", 1,
      files={"patch.diff": diff(1, path="src/ops/norm/rmsnorm_kernel.py", at=48)})  # fmt: skip
    e("gfx942", "triton", "20250612_100000_f0f0f0", 1.45, "two-pass", 12, bench=SUITE,
      reproductions="1")  # fmt: skip
    e("gfx942", "triton", "20250613_100000_abcdef", 1.60, "tuned launch table", 13,
      carrier="tuned_artifact", tuner="a sweep over BLOCK and num_warps",
      apply_env={"RMSNORM_TUNED_TABLE": "artifact/tuned.json"},
      files={"artifact/tuned.json": '{"4096": {"BLOCK": 1024, "num_warps": 8}}\n'})  # fmt: skip
    # Other products.
    e("gfx1200", "triton", "20250614_100000_111111", 1.70, "wave32", 14)
    e("gfx1201", "triton", "20250615_100000_222222", 1.40, "wave32", 15)
    e("gfx90", "triton", "20250616_100000_333333", 1.50, "mfma tiles", 16, gpu_arch="gfx90a")
    e("gfx1100", "triton", "20250617_100000_444444", 1.35, "wave32", 17)  # not in the table
    return root


def strategy_id(gfx, dsl, exp_id, language=""):
    """An entry's record id: its page, language, kernel and exp id (its path, not its meta)."""
    tail = f"{language}-" if language else ""
    return f"amd.{gfx}.{dsl}.rmsnorm.geak-{tail}{exp_id.replace('_', '-')}"


C = strategy_id("gfx942", "triton", "20250603_100000_cccccc")
I = strategy_id("gfx942", "triton", "20250609_100000_c0c0c0")  # noqa: E741
K = strategy_id("gfx942", "triton", "20250611_100000_e0e0e0")
L = strategy_id("gfx942", "triton", "20250612_100000_f0f0f0")


def test_a_geak_tree_resolves_to_the_ranks_geak_picks(store, tmp_path):
    root = geak_tree(tmp_path)
    report = import_tree("geak", store, root.parent)
    assert report.skipped == [], report.skipped
    assert report.imported == 16  # 17 entries, two of them the same code
    assert report.reproductions == [
        {"entry": "gfx942/norm/rmsnorm__triton__gfx942/20250601_100000_aaaaaa", "record": K}
    ]
    assert [n["entry"].rsplit("/", 1)[-1] for n in report.notes] == ["20250605_100000_eeeeee"]

    answer = resolve(store, "triton_rmsnorm.py", product="gfx942", top_n=4)
    # gfx942 + triton: I 1.80 (lifecycle retracted, still retained), K 1.50 (A's code,
    # measured twice), L 1.45, C 1.40, B 1.30 (its direction has two inner spaces: its own),
    # D 1.20; the 20x entry measured on gfx950 (mislabeled), the retired 1.90, the 1.03
    # under the floor, the tuned table (no code), HIP and CK are not offered.
    assert [r["id"] for r in answer["ranks"]] == [I, K, L, C]
    assert [r["speedup"] for r in answer["ranks"]] == [1.8, 1.5, 1.45, 1.4]
    assert [r["reproductions"] for r in answer["ranks"]] == [0, 1, 0, 0]
    assert [r["bench_key"] for r in answer["ranks"]] == [None, None, "b2:rmsnorm-suite", None]
    assert [r["comparable"] for r in answer["ranks"]] == [False] * 4
    assert all(r["alternates"] == [] for r in answer["ranks"])
    counts = answer["counts"]
    assert (counts["retired"], counts["below_floor"], counts["collapsed"]) == (1, 1, 0)
    assert (counts["no_code"], counts["mislabeled"], counts["beyond_top_n"]) == (1, 1, 2)
    assert counts["other_language"] == 2 and counts["other_product"] == 0
    assert {(p["product"], p["language"]) for p in answer["other_language_pages"]} == {
        ("gfx942", "hip"), ("gfx942", "ck")
    }  # fmt: skip
    assert {p["product"] for p in answer["other_arch_pages"]} == {
        "gfx1200", "gfx1201", "gfx90a", "gfx1100"
    }  # fmt: skip

    # The other pages, each with its own code.
    def only(kernel, **hardware):
        return [r["id"] for r in resolve(store, kernel, **hardware)["ranks"]]

    assert only("triton_rmsnorm.py", product="gfx950") == []  # the mislabeled entry
    assert only("triton_rmsnorm.py", product="gfx1201") == [
        strategy_id("gfx1201", "triton", "20250615_100000_222222")
    ]
    assert only("rmsnorm", product="mi250x", dsl="triton") == [
        strategy_id("gfx90a", "triton", "20250616_100000_333333")
    ]
    assert only("rmsnorm", product="gfx1100", dsl="triton") == [
        strategy_id("gfx1100", "triton", "20250617_100000_444444")
    ]
    assert only("hip_rmsnorm.hip", product="gfx942") == [
        strategy_id("gfx942", "any", "20250606_100000_ffffff", "hip")
    ]
    assert only("rmsnorm", product="gfx942", dsl="ck") == [
        strategy_id("gfx942", "any", "20250607_100000_a0a0a0", "ck")
    ]


def test_what_the_records_keep(store, tmp_path):
    root = geak_tree(tmp_path)
    import_tree("geak", store, root.parent)

    def record(record_id):
        return json.loads(store.read_record(record_id).raw)

    k = record(K)
    assert k["evidence"]["raw"]["geak"]["reproductions"] == 1
    assert k["worth"]["track"]["counters"]["verified_effective"] == 1  # A measured it too
    assert k["retrieval"]["signals"]["metrics"]["speedup_x"] == 1.5  # the higher of the two
    assert k["evidence"]["raw"]["geak"]["exp_id"] == "20250611_100000_e0e0e0"
    assert record(C)["evidence"]["raw"]["bench_key"] is None
    hip = record(strategy_id("gfx942", "any", "20250606_100000_ffffff", "hip"))
    assert hip["retrieval"]["scope"]["dsl"] == "any" and hip["payload"]["problem"]["dsl"] == "hip"
    assert "cannot name it" in hip["payload"]["applies_when"][0]
    mislabeled = record(strategy_id("gfx942", "triton", "20250605_100000_eeeeee"))
    assert mislabeled["retrieval"]["scope"]["product"] == "gfx942"
    assert mislabeled["evidence"]["summary"]["measured_on"]["gpu"] == "gfx950"
    mi250x = record(strategy_id("gfx90a", "triton", "20250616_100000_333333"))
    assert mi250x["evidence"]["raw"]["geak"]["filed_under"] == "gfx90"
    assert (mi250x["retrieval"]["scope"]["arch"], mi250x["retrieval"]["scope"]["product"]) == (
        "generic", "gfx90a"
    )  # fmt: skip
    tuned = record(strategy_id("gfx942", "triton", "20250613_100000_abcdef"))
    assert tuned["payload"]["implementation"] == {"format": "none"}
    config = tuned["payload"]["config"]
    assert (
        config["carrier"] == "tuned_artifact" and "num_warps" in config["artifacts"]["tuned.json"]
    )
    assert config["apply_env"] == {"RMSNORM_TUNED_TABLE": "artifact/tuned.json"}
    retired = strategy_id("gfx942", "triton", "20250608_100000_b0b0b0")
    assert store.view().entry(retired)["status"] == "deprecated"
    assert store.view().entry(I)["status"] == "active"  # GEAK's resolve serves it
    assert kb("validate", str(store.location)).returncode == 0


def test_the_cli_pair_from_the_issue(store, tmp_path):
    """`git kb import geak` then `git kb resolve` for triton_rmsnorm.py on gfx942."""
    root = geak_tree(tmp_path)
    done = kb("import", "geak", str(root.parent), "--json", "--store", str(store.location))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"] == 16
    kernel = tmp_path / "triton_rmsnorm.py"
    kernel.write_text(
        "def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, N, BLOCK):\n"
        "    cols = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + cols, mask=cols < N)\n"
    )
    out = tmp_path / "out"
    found = kb("resolve", "--kernel", str(kernel), "--product", "gfx942", "--out", str(out),
               "--store", str(store.location))  # fmt: skip
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert [r["id"] for r in answer["ranks"]] == [I, K, L]
    assert all(r["applies"] for r in answer["ranks"])
    assert "other=9.0" in (out / "candidates" / "01" / "kernel.py").read_text()
