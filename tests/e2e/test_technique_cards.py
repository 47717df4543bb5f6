"""Cards form on traces of one kernel family written by different producers, in their own
words and their own code: `git kb mine` of each, then `git kb curate --cards --apply`,
gives one card per technique two traces share (more warps and fewer warps apart), no card
mixing two techniques, and numbers recomputed here from the records each card cites. The
producers: legacy traces in three voices, a long-horizon trace whose episodes promote, and
a trace shaped like the Atrex producer's (SOL seed, pinned framework baseline, private
episode branches, an ABBA-refused candidate). The store validates, a second pass writes
nothing, `git kb query --technique` and `--list-techniques` read the cache's derived
column, and a 100,000-character query term is answered, not a crash."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from helpers import kb

from gitkb.mine.pipeline import mine
from gitkb.store import Store
from gitkb.testing.trace_builder import Trace
from gitkb.trace import techniques

EVICT = "eviction-policy-evict-first"


def rmsnorm(x: str, evict: bool, warps: int, rows: str = "row") -> str:
    """One producer's Triton rmsnorm: its own names (``x``, ``rows``), the streamed load
    with or without the evict-first hint, launched on ``warps`` warps."""
    hint = ', eviction_policy="evict_first"' if evict else ""
    return f"""import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel({x}_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    {rows} = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    {x} = tl.load({x}_ptr + {rows} * n_cols + offs, mask=mask, other=0.0{hint}).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask)
    var = tl.sum({x} * {x}, axis=0) / n_cols
    tl.store(out_ptr + {rows} * n_cols + offs, {x} * tl.rsqrt(var + eps) * w, mask=mask)


def rmsnorm(inp, w, eps=1e-6):
    out = torch.empty_like(inp)
    block = triton.next_power_of_2(inp.shape[1])
    rmsnorm_kernel[(inp.shape[0],)](inp, w, out, inp.shape[1], eps, BLOCK=block,
                                    num_warps={warps})
    return out
"""


# (trace, hardware, the producer's variable names, its levers in its own words)
PRODUCERS = (
    (1, "NVIDIA H100", ("x", "row"),
     ["evict-first on the streamed x keeps the weight in L2", "num_warps 4 -> 8"]),
    (2, "NVIDIA H100", ("inp", "pid"),
     ["tl.load x eviction_policy evict_first", "8 warps per row saturate the load path"]),
    (3, "NVIDIA H200", ("src", "r"),
     ["streaming loads for the input rows", "warps=2 so two programs share each SM"]),
)  # fmt: skip
FEWER_WARPS_FAILED = (
    "fewer warps per program were slower on sm_90 because each warp then holds twice the "
    "row in registers and the row spills"
)


def producer_trace(root: Path, n: int, hardware: str, names: tuple[str, str], said) -> Path:
    x, rows = names
    t = Trace(root / f"kernel_opt_00{n}_rmsnorm_h4096")
    t.setup(hardware=hardware, name="rmsnorm_h4096",
            description="RMSNorm over rows of 4096 fp16 values")  # fmt: skip
    t.legacy_keep(0, 100.0, "baseline rmsnorm, one program per row",
                  kernel=rmsnorm(x, False, 4, rows))  # fmt: skip
    t.legacy_keep(1, 80.0, said[0], pct="+20.0%", kernel=rmsnorm(x, True, 4, rows))
    warps = 2 if n == 3 else 8
    t.legacy_keep(2, 64.0, said[1], pct="+20.0%", kernel=rmsnorm(x, True, warps, rows))
    if n == 2:
        t.legacy_revert(3, 70.0, "slower", [FEWER_WARPS_FAILED])
    return t.write()


@pytest.fixture
def mined(tmp_path, store) -> Store:
    for n, hardware, names, said in PRODUCERS:
        mine(producer_trace(tmp_path / "traces", n, hardware, names, said), store=store)
    return store


def curate(store: Store, *extra: str) -> dict:
    done = kb("curate", "--cards", *extra, "--store", str(store.location))
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def records_of(store: Store, kind: str) -> dict[str, dict]:
    view = store.view()
    return {
        e["id"]: view.read_record(e["id"]).data
        for e in view.entries()
        if e["type"] == kind and e["status"] == "active"
    }


def recomputed(store: Store, card: dict) -> dict:
    """The card's numbers, worked out here from the records it cites."""
    cited = [store.read_record(i).data for i in card["retrieval"]["links"]["cited_records"]]
    times = [1 + len(r["worth"]["track"].get("confirm_keys", [])) for r in cited]
    kept = [t for t, r in zip(times, cited, strict=True) if r["type"] == "strategy"]
    gains = [r["worth"]["gain"]["pct"] for r in cited if r["type"] == "strategy"]
    return {
        "attempts": sum(times),
        "kept": sum(kept),
        "typical_gain_pct": round(statistics.median(gains), 2) if gains else None,
        "best_gain_pct": round(max(gains), 2) if gains else None,
    }


@pytest.mark.slow
def test_one_card_per_shared_technique_across_producers(mined):
    # mining put the canonical technique first, the producer's own phrase beside it
    strategies = records_of(mined, "strategy")
    evicted = [r for r in strategies.values() if r["retrieval"]["technique_tags"][0] == EVICT]
    assert len(evicted) == 3
    assert all(len(r["retrieval"]["technique_tags"]) >= 2 for r in evicted)
    done = curate(mined, "--apply")
    assert done["written"] >= 3, done
    cards = records_of(mined, "technique-card")
    by_technique = {c["payload"]["technique"]: c for c in cards.values()}
    assert set(by_technique) == {EVICT, "num-warps-up", "num-warps-down"}, sorted(by_technique)
    assert len(by_technique) == len(cards), "one card per technique"
    for technique, card in by_technique.items():
        cited = [mined.read_record(i).data for i in card["retrieval"]["links"]["cited_records"]]
        # no card mixes two techniques: every cited record is the card's technique
        assert {techniques.record_technique(r).key for r in cited} == {technique}
        payload = card["payload"]
        assert {k: payload[k] for k in recomputed(mined, card)} == recomputed(mined, card)
        assert card["evidence"]["summary"]["measured_on"]["technique_vocabulary"] == (
            techniques.vocabulary().version
        )
        assert (
            f"technique vocabulary {techniques.vocabulary().version}"
            in (payload["problem"]["statement"])
        )
    evict = by_technique[EVICT]["payload"]
    assert (evict["attempts"], evict["kept"]) == (3, 3)
    # across the products of one arch: H100 and H200 pages, both hopper
    scope = by_technique[EVICT]["retrieval"]["scope"]
    assert scope["arch"] == "hopper" and scope["architectures"] == ["h100", "h200"]
    assert "raised" in by_technique["num-warps-up"]["payload"]["problem"]["statement"]
    down = by_technique["num-warps-down"]["payload"]
    assert "lowered" in by_technique["num-warps-down"]["payload"]["problem"]["statement"]
    assert (down["attempts"], down["kept"]) == (2, 1)  # H200 kept it; H100's dead end did not

    tip = mined.tip
    again = curate(mined, "--apply")
    assert (again["written"], again["retracted"], mined.tip) == (0, 0, tip)
    checked = kb("validate", str(mined.location), "--full")
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()

    # the derived column answers --technique and --list-techniques
    listed = kb("query", "--list-techniques", "--store", str(mined.location))
    assert listed.returncode == 0
    assert {EVICT, "num-warps-up", "num-warps-down", "num-warps"} <= set(
        listed.stdout.decode().split()
    )
    asked = kb("query", "--technique", "num-warps-down", "--json", "--limit", "20",
               "--store", str(mined.location))  # fmt: skip
    assert asked.returncode == 0, asked.stderr.decode()
    served = json.loads(asked.stdout)["records"]
    assert served and all(
        techniques.record_technique(mined.read_record(r["id"]).data).key == "num-warps-down"
        for r in served
    )
    unknown = kb("query", "--technique", "num-warp", "--store", str(mined.location))
    assert unknown.returncode == 2 and b"did you mean: num-warps" in unknown.stderr

    # a term of 100,000 characters (and one of 100,000 GLOB metacharacters) is answered
    for term in ("a" * 100_000, "*" * 100_000):
        long = kb("query", term, "--json", "--store", str(mined.location))
        assert long.returncode == 0, long.stderr.decode()[-300:]
        assert b"a bug in gitkb" not in long.stderr
        assert json.loads(long.stdout)["result"]["kind"] in ("empty", "fallback")


@pytest.mark.slow
def test_a_forged_canonical_tag_is_refused_at_admission(mined, tmp_path):
    strategy = next(
        r for r in records_of(mined, "strategy").values()
        if r["retrieval"]["technique_tags"][0] == EVICT
    )  # fmt: skip
    forged = json.loads(json.dumps(strategy))
    forged["id"] = strategy["id"] + "-forged"
    forged["retrieval"]["technique_tags"][0] = "num-warps-up"
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    done = kb("admit", str(path), "--store", str(mined.location))
    assert done.returncode != 0
    out = done.stdout.decode() + done.stderr.decode()
    assert "technique-claim" in out and "num-warps-up" in out and "Traceback" not in out


# --- the same family on B200 from three producers: legacy, long-horizon, Atrex-shaped ------

DESCRIPTION = "RMSNorm over rows of 4096 fp16 values"


def promote_trace(root: Path) -> Path:
    """A long-horizon campaign: its episodes promote the evict-first hint and more warps,
    and one pivots on a TMA experiment."""
    t = Trace(root / "kernel_opt_004_rmsnorm_h4096")
    t.setup(hardware="NVIDIA B200", name="rmsnorm_h4096", description=DESCRIPTION)
    t.v0_two_commit(200.0)
    t.v1_two_commit(100.0, kernel=rmsnorm("h", False, 4, "i"))
    t.promote(1, 2, 80.0, 20.0, "streamed loads of h marked evict_first so the weight stays "
              "in L2", kernel=rmsnorm("h", True, 4, "i"))  # fmt: skip
    tma = {"name": "tma rows", "hypothesis": "bulk copies hide the load latency",
           "change": "load each row with a TMA descriptor", "evidence": "slower",
           "result": "slower on sm_100 because the descriptor setup per row exceeds the load "
           "time of an 8 KB row, so the copy engine never overlaps",
           "decision": "revert"}  # fmt: skip
    t.non_promotion(3, 2, "pivot", "v2", 80.0, experiments=[tma])
    t.promote(3, 4, 64.0, 20.0, "raise the warps from 4 to 8 per row",
              kernel=rmsnorm("h", True, 8, "i"))  # fmt: skip
    return t.write()


def atrex_shaped_trace(root: Path) -> Path:
    """The Atrex producer's shapes: the SOL seed, the pinned framework baseline, private
    episode checkpoints, promotions, and a candidate the ABBA verification refused."""
    t = Trace(root / "kernel_opt_005_rmsnorm_h4096")
    t.setup(hardware="NVIDIA B200", name="rmsnorm_h4096", description=DESCRIPTION)
    t.sol_seed(200.0, name="rmsnorm_h4096", description=DESCRIPTION)
    base = t.framework_v1(100.0, kernel=rmsnorm("row_x", False, 4, "pid"))
    t.episode_branch(1, base, 2)
    t.promote(1, 2, 80.0, 20.0, "tl.load x eviction_policy evict_first",
              kernel=rmsnorm("row_x", True, 4, "pid"))  # fmt: skip
    fewer = {"name": "two warps", "hypothesis": "fewer warps free registers",
             "change": "drop to 2 warps per row", "evidence": "slower",
             "result": "slower on sm_100 because each warp then holds twice the row in "
             "registers and the row spills", "decision": "revert"}  # fmt: skip
    t.rejected_candidate(3, 2, "v2", 80.0, "two warps per row", [fewer])
    t.promote(3, 4, 64.0, 20.0, "num_warps 4 -> 8", kernel=rmsnorm("row_x", True, 8, "pid"))
    return t.write()


@pytest.mark.slow
def test_long_horizon_and_atrex_shaped_traces_share_cards_with_a_legacy_one(tmp_path, store):
    said = ["evict-first on the streamed x keeps the weight in L2",
            "8 warps per row saturate the load path"]  # fmt: skip
    traces = tmp_path / "traces"
    for trace in (
        producer_trace(traces, 6, "NVIDIA B200", ("x", "row"), said),
        promote_trace(traces),
        atrex_shaped_trace(traces),
    ):
        mine(trace, store=store)
    strategies = records_of(store, "strategy")
    # each producer's promotion carries the canonical key first, its own phrase beside it
    promoted = {r["payload"]["change"]: r["retrieval"]["technique_tags"] for r in
                strategies.values()}  # fmt: skip
    assert promoted["tl.load x eviction_policy evict_first"][0] == EVICT
    assert promoted["raise the warps from 4 to 8 per row"][0] == "num-warps-up"
    curate(store, "--apply")
    cards = records_of(store, "technique-card")
    by_technique = {c["payload"]["technique"]: c for c in cards.values()}
    assert sorted(by_technique) == [EVICT, "num-warps-up"] and len(cards) == 2
    labels = {"kernel_opt_006_rmsnorm_h4096", "kernel_opt_004_rmsnorm_h4096",
              "kernel_opt_005_rmsnorm_h4096"}  # fmt: skip
    for technique, card in by_technique.items():
        cited = [store.read_record(i).data for i in card["retrieval"]["links"]["cited_records"]]
        assert {techniques.record_technique(r).key for r in cited} == {technique}
        assert {r["evidence"]["raw"]["source_repo"] for r in cited} == labels
        payload = card["payload"]
        assert {k: payload[k] for k in recomputed(store, card)} == recomputed(store, card)
        assert (payload["attempts"], payload["kept"]) == (3, 3)
        assert card["retrieval"]["scope"]["arch"] == "blackwell"
    # the framework baselines' diffs show num_warps=4 appear at its default: no direction,
    # so they join no card (a card over them could pool warps raised and lowered)
    baselines = [r for r in strategies.values() if "framework baseline" in r["payload"]["change"]]
    assert len(baselines) == 2
    assert {techniques.record_technique(r).key for r in baselines} == {"num-warps"}
    cited_anywhere = {i for c in cards.values() for i in c["retrieval"]["links"]["cited_records"]}
    assert not {r["id"] for r in baselines} & cited_anywhere
    # one trace alone lowered the warps, and that failed: no card
    antis = records_of(store, "anti-strategy")
    assert "num-warps-down" in {techniques.record_technique(r).key for r in antis.values()}

    tip = store.tip
    again = curate(store, "--apply")
    assert (again["written"], again["retracted"], store.tip) == (0, 0, tip)
    checked = kb("validate", str(store.location), "--full")
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
