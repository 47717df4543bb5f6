"""git kb resolve: matching, curation, the answer, the audit folder, bad input."""

from __future__ import annotations

import json

import pytest
from helpers import git, kb, lose_object
from helpers.records import strategy

from gitkb.errors import GitkbError
from gitkb.record import dumps
from gitkb.record.curation import exp_id_of
from gitkb.store import Store
from gitkb.warmstart.attest import attest
from gitkb.warmstart.resolve import resolve
from gitkb.warmstart.retract import retract


def admit(store, *records):
    for record in records:
        store.admit(dumps(record), "insert")


def ids(answer):
    return [r["id"] for r in answer["ranks"]]


def test_best_same_arch_code_first_and_other_arches_named(bare_store):
    a, b = strategy(1, pct=30.0), strategy(2, pct=10.0)
    elsewhere = strategy(3, product="mi300x", pct=50.0)
    admit(bare_store, a, b, elsewhere, strategy(4, kernel="layernorm"))
    answer = resolve(bare_store, "triton_softmax.py", product="h100")
    assert answer["read_reason"] == "read"
    assert answer["kernel"]["tier"] == "exact" and answer["kernel"]["matched"] == ["softmax"]
    assert ids(answer) == [a["id"], b["id"]]
    assert answer["ranks"][0]["speedup"] == pytest.approx(100 / 70, abs=1e-4)
    assert answer["counts"]["total"] == 3 and answer["counts"]["other_arch"] == 1
    assert answer["other_arch_pages"] == [
        {"vendor": "amd", "arch": "cdna3", "product": "gfx942", "language": "triton", "records": 1}
    ]
    assert resolve(bare_store, "softmax", arch="cdna3")["ranks"][0]["id"] == (elsewhere["id"])
    assert resolve(bare_store, "softmax", arch="blackwell")["read_reason"] == ("no_same_arch")


def test_retired_never_offered_unless_asked(bare_store):
    a, b = strategy(1, pct=30.0), strategy(2, pct=10.0)
    admit(bare_store, a, b)
    retract(bare_store, a["id"], "wrong results on odd widths")
    answer = resolve(bare_store, "softmax", arch="hopper")
    assert ids(answer) == [b["id"]] and answer["counts"]["retired"] == 1
    everything = resolve(bare_store, "softmax", arch="hopper", include_retired=True)
    assert ids(everything) == [a["id"], b["id"]] and everything["ranks"][0]["retired"]


def test_fully_retired_page_offers_nothing(bare_store):
    a, b = strategy(1), strategy(2)
    admit(bare_store, a, b)
    for record in (a, b):
        retract(bare_store, record["id"], "superseded by a correct kernel")
    answer = resolve(bare_store, "softmax", arch="hopper")
    assert answer["read_reason"] == "all_retired" and answer["ranks"] == []
    assert answer["counts"]["retired"] == 2


def test_one_rank_per_direction_with_alternates(bare_store):
    best = strategy(1, pct=30.0, direction="online_rescale")
    runner_up = strategy(2, pct=25.0, direction="online-rescale")
    other = strategy(3, pct=10.0, direction="vectorize")
    admit(bare_store, best, runner_up, other)
    answer = resolve(bare_store, "softmax", arch="hopper")
    assert ids(answer) == [best["id"], other["id"]]
    assert [a["id"] for a in answer["ranks"][0]["alternates"]] == [runner_up["id"]]
    assert answer["counts"]["collapsed"] == 1


def test_a_retire_hint_never_reorders(bare_store):
    """The GEAK followed (iAmir97/GEAK @ a6a9d0e) keeps hints advisory: the hinted record
    still leads its clean, slower sibling (a later GEAK's demote_hinted is not followed)."""
    suspect = strategy(1, pct=30.0, direction="same")
    clean = strategy(2, pct=20.0, direction="same")
    admit(bare_store, suspect, clean)
    for _ in range(2):
        attest(bare_store, suspect["id"], "not_reproduced", by="box-a")
    rank = resolve(bare_store, "softmax", arch="hopper")["ranks"][0]
    assert rank["id"] == suspect["id"] and "not reproduced 2 times" in rank["retire_hint"]
    assert rank["alternates"][0]["id"] == clean["id"]


def test_empty_direction_stands_alone(bare_store):
    a, b = strategy(1, pct=30.0, direction=""), strategy(2, pct=20.0, direction="")
    admit(bare_store, a, b)
    answer = resolve(bare_store, "softmax", arch="hopper")
    assert ids(answer) == [a["id"], b["id"]] and answer["counts"]["collapsed"] == 0
    assert all(r["direction"] == "" and r["alternates"] == [] for r in answer["ranks"])


def test_near_ties_stay_under_the_floor(bare_store):
    near_tie = strategy(1, pct=4.0)  # 1.042x
    admit(bare_store, near_tie)
    answer = resolve(bare_store, "softmax", arch="hopper")
    assert answer["read_reason"] == "below_min_speedup" and answer["counts"]["below_floor"] == 1
    lower = resolve(bare_store, "softmax", arch="hopper", min_speedup=1.01)
    assert ids(lower) == [near_tie["id"]]


def test_top_n_limits_ranks(bare_store):
    admit(bare_store, *(strategy(n, pct=10.0 + n) for n in range(1, 6)))
    answer = resolve(bare_store, "softmax", arch="hopper", top_n=2)
    assert len(answer["ranks"]) == 2 and answer["counts"]["beyond_top_n"] == 3


def test_comparability_flags_mixed_bench_keys(bare_store):
    a = strategy(1, pct=30.0, cases=["b1-n4096", "b8-n8192"])
    b = strategy(2, pct=20.0, cases=["b8-n8192", "b1-n4096"])  # same cases, other order
    c = strategy(3, pct=10.0, cases=["b1-n4096"])
    admit(bare_store, a, b, c)
    ranks = resolve(bare_store, "softmax", arch="hopper")["ranks"]
    assert [r["comparable"] for r in ranks] == [True, True, False]
    assert ranks[0]["bench_key"] == ranks[1]["bench_key"] != ranks[2]["bench_key"]


def test_reproduced_beats_one_off_on_a_tie(bare_store):
    one_off, reproduced = strategy(1, pct=20.0), strategy(2, pct=20.0)
    admit(bare_store, one_off, reproduced)
    # An even tie goes to the older exp id (a mined record's is its id's digest, as exported).
    older = min((one_off, reproduced), key=exp_id_of)
    assert ids(resolve(bare_store, "softmax", arch="hopper"))[0] == older["id"]
    again = dict(reproduced, id="nvidia.h100.triton.softmax.rerun-s09")
    admission = bare_store.admit(dumps(again), "insert")
    assert admission.action == "confirm" and admission.record_id == reproduced["id"]
    answer = resolve(bare_store, "softmax", arch="hopper")
    assert ids(answer) == [reproduced["id"], one_off["id"]]
    assert answer["ranks"][0]["reproductions"] == 1


def test_corrupt_entry_is_skipped_and_counted(store):
    good, bad = strategy(1, pct=10.0), strategy(2, pct=30.0)
    admit(store, good, bad)
    path = store.view().entry(bad["id"])["path"]
    (store.location / path).write_text("{ not json")
    git("commit", "-qam", "break a record", cwd=store.location)
    answer = resolve(store, "softmax", arch="hopper")
    assert ids(answer) == [good["id"]] and answer["counts"]["corrupt"] == 1


@pytest.mark.slow
def test_reads_only_the_candidates_files_and_no_repository(bare_store, monkeypatch):
    """The cache chooses; only the same-arch candidates' records (and ledgers) are read,
    and with the cache current for main the repository is never opened."""
    from gitkb.store.view import StoreView
    from gitkb.vcs.repository import Repository

    mine = [strategy(1), strategy(2, product="mi300x")]
    admit(bare_store, *mine, *(strategy(n, kernel=f"kernel{n}") for n in range(3, 9)))
    read = []
    original = StoreView.read_checked

    def spy(view, paths):
        read.extend(paths)
        return original(view, paths)

    def no_repository(*args, **kwargs):
        raise AssertionError("resolve opened the repository")

    monkeypatch.setattr(StoreView, "read_checked", spy)
    resolve(bare_store, "softmax", arch="hopper")  # the cache is current after this
    monkeypatch.setattr(Repository, "open", no_repository)
    read.clear()
    answer = resolve(Store.open(bare_store.location), "softmax", arch="hopper")
    assert ids(answer) == [mine[0]["id"]]
    records = [p for p in read if p.startswith("records/")]
    assert records == [bare_store.view().entry(mine[0]["id"])["path"]]
    assert (bare_store.location / "gitkb-cache" / "index.sqlite3").is_file()


def test_a_missing_object_is_skipped_and_counted(tmp_path):
    """A store whose object store lost one record's blob: resolve skips that record and
    counts it, once the cache has to be rebuilt from the damaged repository too."""
    store = Store.init(tmp_path / "kb.git", bare=True)
    good, lost = strategy(1, pct=10.0), strategy(2, pct=30.0)
    admit(store, good, lost)
    path = store.view().entry(lost["id"])["path"]
    lose_object(store.location, store.repo.blob_sha(store.tip, path))
    answer = resolve(Store.open(store.location), "softmax", arch="hopper")
    assert ids(answer) == [good["id"]] and answer["counts"]["corrupt"] == 1


@pytest.mark.slow
def test_bare_clone_without_checkout(store, tmp_path):
    admit(store, strategy(1))
    git("clone", "-q", "--bare", str(store.location), str(tmp_path / "clone.git"))
    clone = Store.open(tmp_path / "clone.git")
    assert ids(resolve(clone, "softmax", product="sm_90")) == [strategy(1)["id"]]


@pytest.mark.slow
def test_kernel_matching_tiers_and_ambiguity(bare_store):
    admit(
        bare_store,
        strategy(1, kernel="rms_norm"),
        strategy(2, kernel="fused_moe_gate"),
        strategy(3, kernel="fused_moe_topk"),
    )
    assert resolve(bare_store, "RMSNorm", arch="hopper")["kernel"]["tier"] == ("normalized")
    fuzzy = resolve(bare_store, "triton_rms_norm_fwd_task.py", arch="hopper")
    assert fuzzy["kernel"]["tier"] == "fuzzy" and fuzzy["read_reason"] == "read"
    assert fuzzy["options"]["dsl"] == "triton" and fuzzy["options"]["dsl_from"] == "kernel name"
    # The name says HIP: a Triton record is never offered to a HIP kernel.
    hip = resolve(bare_store, "hip_rms_norm_fwd_task.hip", arch="hopper")
    assert hip["kernel"]["tier"] == "fuzzy" and hip["read_reason"] == "no_same_language"
    assert hip["other_language_pages"][0]["language"] == "triton"
    ambiguous = resolve(bare_store, "fused_moe", arch="hopper")
    assert ambiguous["read_reason"] == "ambiguous" and ambiguous["ranks"] == []
    assert ambiguous["kernel"]["ambiguous"] == ["fused_moe_gate", "fused_moe_topk"]
    missing = resolve(bare_store, "conv2d", arch="hopper")
    assert missing["read_reason"] == "kernel_not_found"
    assert resolve(bare_store, "rms_norm")["read_reason"] == "missing_arch"


def test_prose_and_code_mirrored_before_verdict(bare_store, tmp_path):
    example = strategy(1, code=None)
    original = json.loads(json.dumps(example))
    admit(bare_store, example, strategy(2, pct=10.0, direction="dir1"))
    kernel = tmp_path / "softmax.py"
    kernel.write_text("def k(x, m):\n    y = tl.exp(x - m)\n    return y\n")
    out = tmp_path / "out"
    answer = resolve(bare_store, str(kernel), arch="hopper", out=str(out))
    rank = answer["ranks"][0]
    assert rank["applies"] is True
    assert "tl.exp2((x - m) * 3)" in (out / "candidates" / "01" / "kernel.py").read_text()
    assert (out / "candidates" / "01" / "change.diff").read_text() == (
        original["payload"]["implementation"]["snippet"]
    )
    alternate = rank["alternates"][0]
    assert alternate["code_path"].endswith("change.diff") or alternate["code_path"].endswith(".py")
    prose = (out / "kb_references" / "reference_01.md").read_text()
    assert original["payload"]["mechanism"] in prose and "## What did not work" in prose
    assert rank["prose_path"] == str(out / "kb_references" / "reference_01.md")
    assert example["id"] in (out / "kb_references" / "index.md").read_text()
    assert json.loads((out / "resolve.json").read_text())["ranks"][0]["id"] == example["id"]
    with pytest.raises(GitkbError, match="not empty"):
        resolve(bare_store, "softmax", arch="hopper", out=str(out))


@pytest.mark.slow
def test_cli_prints_one_json_document(bare_store):
    admit(bare_store, strategy(1))
    result = kb(
        "resolve", "--kernel", "softmax", "--product", "h100", "--store", str(bare_store.location)
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ranks"][0]["id"] == strategy(1)["id"]
    nothing = kb(
        "resolve", "--kernel", "conv", "--arch", "hopper", "--store", str(bare_store.location)
    )
    assert nothing.returncode == 0 and json.loads(nothing.stdout)["read_reason"] == (
        "kernel_not_found"
    )


@pytest.mark.slow
def test_missing_store_root_is_a_miss(tmp_path):
    for where in (tmp_path / "no-such-store", tmp_path):
        result = kb("resolve", "--kernel", "softmax", "--arch", "hopper", "--store", str(where))
        assert result.returncode != 0 and result.stdout == b""
        err = result.stderr.decode()
        assert err.startswith("gitkb: error: ") and "not a gitkb store" in err
        assert "Traceback" not in err and err.count("\n") == 1


def test_unknown_arch_token_names_the_known_ones(bare_store):
    result = kb(
        "resolve", "--kernel", "softmax", "--product", "h1000", "--store", str(bare_store.location)
    )
    assert result.returncode == 2
    assert b"unknown hardware token 'h1000'" in result.stderr and b"mi300x" in result.stderr
    with pytest.raises(GitkbError, match="known arches"):
        resolve(bare_store, "softmax", arch="volta")


# ----------------------------------------------------------------- pages (GEAK's identity)


@pytest.mark.slow
def test_a_product_is_its_own_page_not_its_family(bare_store):
    """gfx1200 and gfx1201 are both RDNA4, and still two pages; gfx90a (no clean-1.3 family)
    resolves by its page; a bare arch still reads every product of the family."""
    g1200, g1201 = strategy(1, product="gfx1200", pct=40.0), strategy(2, product="gfx1201")
    mi250x = strategy(3, product="gfx90a", pct=15.0)
    admit(bare_store, g1200, g1201, mi250x)
    answer = resolve(bare_store, "softmax", product="gfx1201")
    assert ids(answer) == [g1201["id"]] and answer["counts"]["other_product"] == 1
    assert answer["hardware"]["page"] == "gfx1201" and answer["ranks"][0]["product"] == "gfx1201"
    assert {p["product"] for p in answer["other_arch_pages"]} == {"gfx1200", "gfx90a"}
    assert ids(resolve(bare_store, "softmax", product="rx9070")) == [g1201["id"]]
    assert ids(resolve(bare_store, "softmax", product="MI250X")) == [mi250x["id"]]
    assert ids(resolve(bare_store, "softmax", arch="rdna4")) == [g1200["id"], g1201["id"]]
    with pytest.raises(GitkbError, match="several vendors"):
        resolve(bare_store, "softmax", arch="generic")


def test_a_mislabeled_record_is_served_on_neither_page(bare_store):
    filed = strategy(1, product="mi300x", pct=80.0)
    filed["evidence"]["summary"]["measured_on"]["gpu"] = "gfx950"  # measured elsewhere
    honest = strategy(2, product="mi300x", pct=20.0)
    admit(bare_store, filed, honest)
    here = resolve(bare_store, "softmax", product="gfx942")
    assert ids(here) == [honest["id"]] and here["counts"]["mislabeled"] == 1
    there = resolve(bare_store, "softmax", product="mi355x")
    assert ids(there) == [] and there["counts"]["mislabeled"] == 1


def test_an_unknown_gfx_is_kept_as_its_own_page(bare_store):
    record = strategy(1, product="gfx942")
    record["id"] = "amd.gfx1100.triton.softmax.step-1-s01"
    record["retrieval"]["scope"]["product"] = "gfx1100"
    record["evidence"]["summary"]["measured_on"]["gpu"] = "gfx1100"
    admit(bare_store, record)
    answer = resolve(bare_store, "softmax", product="gfx1100")
    assert ids(answer) == [record["id"]] and answer["hardware"]["page"] == "gfx1100"
    assert resolve(bare_store, "softmax", product="gfx942")["read_reason"] == ("no_same_arch")


def test_dsl_filters_code_records_strictly(bare_store):
    triton = strategy(1, pct=10.0)
    untyped = strategy(2, pct=30.0)  # a code record whose language no field names
    untyped["retrieval"]["scope"]["dsl"] = "any"
    untyped["retrieval"]["generality"]["language"] = "any"
    del untyped["payload"]["problem"]["dsl"]
    hip = strategy(3, pct=50.0)  # HIP: clean-1.3's enum says any, the problem says hip
    hip["retrieval"]["scope"]["dsl"] = "any"
    hip["retrieval"]["generality"]["language"] = "any"
    hip["payload"]["problem"]["dsl"] = "hip"
    admit(bare_store, triton, untyped, hip)
    answer = resolve(bare_store, "softmax", product="h100", dsl="triton")
    assert ids(answer) == [triton["id"]] and answer["counts"]["other_language"] == 2
    assert ids(resolve(bare_store, "softmax", product="h100", dsl="hip")) == [hip["id"]]
    everything = resolve(bare_store, "softmax", product="h100", dsl="any")
    assert ids(everything) == [hip["id"], untyped["id"], triton["id"]]
    assert everything["ranks"][0]["language"] == "hip"
    with pytest.raises(GitkbError, match="known languages"):
        resolve(bare_store, "softmax", product="h100", dsl="pascal")


def test_directions_fold_case_and_whitespace(bare_store):
    def directed(n, pct, text):
        record = strategy(n, pct=pct)
        record["evidence"]["raw"]["direction"] = text
        return record

    # GEAK's fold: trimmed and lowercased; inner spaces count.
    best = directed(1, 30.0, "Evict-First  loads")
    same = directed(2, 20.0, " EVICT-first  loads ")
    other = directed(5, 18.0, "evict-first loads")
    alone_a, alone_b = directed(3, 15.0, ""), directed(4, 12.0, "")
    admit(bare_store, best, same, other, alone_a, alone_b)
    answer = resolve(bare_store, "softmax", product="h100", top_n=5)
    assert ids(answer) == [best["id"], other["id"], alone_a["id"], alone_b["id"]]
    assert [a["id"] for a in answer["ranks"][0]["alternates"]] == [same["id"]]
    assert answer["ranks"][0]["direction"] == "evict-first  loads"


def test_no_bench_key_on_either_side_is_not_comparable(bare_store):
    a, b = strategy(1, pct=30.0), strategy(2, pct=20.0)
    for record in (a, b):
        record["worth"]["gain"]["metrics"][0].pop("measured_over", None)
        record["evidence"]["raw"].pop("bench_cases", None)
    admit(bare_store, a, b)
    ranks = resolve(bare_store, "softmax", product="h100")["ranks"]
    assert [r["bench_key"] for r in ranks] == [None, None]
    assert [r["comparable"] for r in ranks] == [False, False]


def test_a_numeric_string_speedup_is_a_number(bare_store):
    stated = strategy(1, pct=5.0)
    stated["retrieval"]["signals"]["metrics"]["speedup_x"] = "1.45"
    admit(bare_store, stated, strategy(2, pct=20.0))
    ranks = resolve(bare_store, "softmax", product="h100")["ranks"]
    assert ranks[0]["id"] == stated["id"] and ranks[0]["speedup"] == 1.45


def test_a_diff_that_does_not_apply_is_reference_only(bare_store, tmp_path):
    fits = strategy(1, pct=10.0)
    elsewhere = strategy(2, pct=40.0, code="-    z = x * 2\n+    z = x + x\n")
    admit(bare_store, fits, elsewhere)
    kernel = tmp_path / "softmax.py"
    kernel.write_text("def k(x, m):\n    y = tl.exp(x - m)\n    return y\n")
    out = tmp_path / "out"
    answer = resolve(bare_store, str(kernel), product="h100", out=str(out))
    assert ids(answer) == [fits["id"]] and answer["ranks"][0]["applies"] is True
    [reference] = answer["reference_only"]
    assert reference["id"] == elsewhere["id"] and "does not apply" in reference["reason"]
    assert answer["counts"]["reference_only"] == 1
    index = (out / "kb_references" / "index.md").read_text()
    assert "## Reference only" in index and elsewhere["id"] in index.split("## Reference only")[1]
    assert reference["prose_path"].endswith("reference_only_01.md")
    assert (
        (out / "kb_references" / "reference_only_01.md").read_text().startswith("# Reference only:")
    )
    only = tmp_path / "only"
    nothing = resolve(bare_store, str(kernel), product="h100", min_speedup=1.2, out=only)
    assert nothing["read_reason"] == "reference_only" and nothing["ranks"] == []


def test_a_store_kept_open_resolves_what_main_gained_since(bare_store):
    """A long-lived reader (the MCP server) keeps the store's kernel names and a resolved
    kernel's rows while the cache holds one commit: a kernel, or a kernel's record, that
    another process admits is resolved by the next call."""
    admit(bare_store, strategy(1))
    assert ids(resolve(bare_store, "triton_softmax.py", product="h100")) == [strategy(1)["id"]]
    admit(Store.open(bare_store.location), strategy(3, pct=60.0))
    again = resolve(bare_store, "triton_softmax.py", product="h100")
    assert ids(again) == [strategy(3, pct=60.0)["id"], strategy(1)["id"]]
    missing = resolve(bare_store, "triton_layernorm.py", product="h100")
    assert missing["read_reason"] == "kernel_not_found"
    admit(Store.open(bare_store.location), strategy(2, kernel="layernorm", pct=25.0))
    found = resolve(bare_store, "triton_layernorm.py", product="h100")
    assert found["read_reason"] == "read" and found["commit"] != missing["commit"]
    assert ids(found) == [strategy(2, kernel="layernorm")["id"]]
