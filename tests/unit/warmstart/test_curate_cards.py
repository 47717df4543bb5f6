"""Technique cards (`git kb curate --cards`) on a store mined from several traces of one
operator at different shapes and hardware pages: the numbers a card states are
recomputed here from the records it cites, the card gate refuses each defect at
admission and on push, and a re-run writes nothing."""

from __future__ import annotations

import copy
import json
import statistics

import pytest
from helpers import git, kb
from helpers.campaigns import CAMPAIGNS, VECTOR_FAILED, curate, rmsnorm_trace
from helpers.pushes import hooked_server_and_clone

from gitkb import record as rec
from gitkb.errors import AdmissionRefused
from gitkb.mine.pipeline import mine
from gitkb.store import Store
from gitkb.testing.trace_files import kernel_source


@pytest.fixture
def mined(tmp_path, store) -> Store:
    for campaign in CAMPAIGNS:
        mine(rmsnorm_trace(tmp_path, *campaign), store=store)
    return store


def live_cards(store: Store) -> dict[str, dict]:
    view = store.view()
    return {
        e["id"]: view.read_record(e["id"]).data
        for e in view.entries()
        if e["type"] == "technique-card" and e["status"] == "active"
    }


def recomputed(store: Store, card: dict) -> dict:
    """The card's numbers, worked out here from the records it cites."""
    cited = [store.read_record(i).data for i in card["retrieval"]["links"]["cited_records"]]
    times = [1 + len(r["worth"]["track"].get("confirm_keys", [])) for r in cited]
    kept = [r for r in cited if r["type"] == "strategy"]
    gains = [r["worth"]["gain"]["pct"] for r in kept]
    attempts = sum(times)
    kept_times = sum(t for t, r in zip(times, cited, strict=True) if r["type"] == "strategy")
    return {
        "attempts": attempts,
        "kept": kept_times,
        "success_rate_pct": round(kept_times / attempts * 100, 1),
        "typical_gain_pct": round(statistics.median(gains), 2) if gains else None,
        "best_gain_pct": round(max(gains), 2) if gains else None,
        "measured_wins": [
            {
                "operator": r["payload"]["problem"]["operator"],
                "dsl": "triton",
                "gain_pct": r["worth"]["gain"]["pct"],
                "change": r["payload"]["change"],
            }
            for r in sorted(kept, key=lambda r: r["id"])
        ],
        "caveats": [
            r["payload"]["established_fact"]["mechanism"]
            for r in sorted(cited, key=lambda r: r["id"])
            if r["type"] == "anti-strategy"
        ],
    }


def card_for(cards: dict[str, dict], technique: str) -> dict:
    return next(c for c in cards.values() if c["payload"]["technique"] == technique)


@pytest.mark.slow
def test_cards_numbers_recompute_from_their_cited_records(mined):
    tip = mined.tip
    plan = curate(mined)
    assert mined.tip == tip, "a dry run writes nothing"
    assert {c["action"] for c in plan["cards"]} == {"write"}
    done = curate(mined, "--apply")
    assert done["written"] == len(plan["cards"]) == 3
    cards = live_cards(mined)
    assert len(cards) == 3
    for card in cards.values():
        payload = card["payload"]
        assert {k: payload[k] for k in recomputed(mined, card)} == recomputed(mined, card)
        assert payload["success_rate_pct"] == round(payload["kept"] / payload["attempts"] * 100, 1)
    vector = card_for(cards, "vector-loads")
    # two traces kept it on H100 (+20%, +30% against their own baselines), one gave it up on H200
    assert (vector["payload"]["attempts"], vector["payload"]["kept"]) == (3, 2)
    assert [c.lower() for c in vector["payload"]["caveats"]] == [VECTOR_FAILED]
    assert "sm_arch=sm_90" in vector["payload"]["when"]
    # measured on two pages: no single product is claimed, both are listed
    scope = vector["retrieval"]["scope"]
    assert scope["product"] is None and scope["architectures"] == ["h100", "h200"]
    assert scope["operator_family"] == "rmsnorm-and-fused-add-rmsnorm"
    # one anti-strategy record, confirmed by the second trace: two attempts, two traces
    persistent = card_for(cards, "persistent-kernel")
    assert (persistent["payload"]["attempts"], persistent["payload"]["kept"]) == (2, 0)
    assert persistent["retrieval"]["scope"]["product"] == "h100"

    check = kb("validate", str(mined.location), "--full")
    assert check.returncode == 0, check.stdout.decode()
    assert "0 of 19 gates failed" in check.stdout.decode()
    tip = mined.tip
    again = curate(mined, "--apply")
    assert again["written"] == again["retracted"] == 0 and mined.tip == tip
    assert {c["action"] for c in again["cards"]} == {"unchanged"}


@pytest.mark.slow
def test_a_card_is_regenerated_when_its_evidence_changes(mined):
    curate(mined, "--apply")
    old = card_for(live_cards(mined), "vector-loads")
    retracted = next(i for i in old["retrieval"]["links"]["cited_records"] if ".h100." in i)
    done = kb("retract", retracted, "--reason", "mismeasured", "--store", str(mined.location))
    assert done.returncode == 0, done.stderr.decode()
    # stale, not false: the stored card still recomputes from what it cites
    assert kb("validate", str(mined.location), "--full").returncode == 0
    plan = curate(mined, "--apply")
    steps = {c["technique"]: c for c in plan["cards"]}
    step = steps["vector-loads"]
    assert step["action"] == "regenerate" and step["replaces"] == old["id"]
    assert plan["written"] == plan["retracted"] == 1
    new = mined.read_record(step["id"]).data
    assert new["retrieval"]["links"]["supersedes"] == [old["id"]]
    assert retracted not in new["retrieval"]["links"]["cited_records"]
    assert (new["payload"]["attempts"], new["payload"]["kept"]) == (2, 1)
    assert mined.read_record(old["id"]).data["status"] == "deprecated"
    assert mined.log(old["id"])[0]["trailers"]["KB-Reason"] == f"superseded by {new['id']}"
    assert kb("validate", str(mined.location), "--full").returncode == 0


def _tampered(card: dict, how: str) -> dict:
    card = copy.deepcopy(card)
    card["id"] = card["id"][:-2] + "99"
    if how == "gain":
        card["payload"]["typical_gain_pct"] = card["worth"]["gain"]["pct"] = 42.0
    elif how == "scope":
        card["retrieval"]["scope"]["product"] = "h100"
        card["retrieval"]["scope"].pop("architectures")
    elif how == "retracted":
        pass  # its cited record is retracted by the caller
    return card


@pytest.mark.slow
@pytest.mark.parametrize("how", ["gain", "scope", "retracted"])
def test_the_card_gate_refuses_a_defective_card_at_admission(mined, how):
    curate(mined, "--apply")
    card = _tampered(card_for(live_cards(mined), "vector-loads"), how)
    if how == "retracted":
        kb("retract", card["retrieval"]["links"]["cited_records"][0], "--reason", "bad",
           "--store", str(mined.location))  # fmt: skip
    with pytest.raises(AdmissionRefused, match="technique-card"):
        mined.admit(rec.dumps(card), "insert")


@pytest.mark.slow
def test_the_server_refuses_a_pushed_card_whose_numbers_are_not_its_evidence(tmp_path, monkeypatch):
    _, work = hooked_server_and_clone(tmp_path, monkeypatch)
    for campaign in CAMPAIGNS:
        mine(rmsnorm_trace(tmp_path / "traces", *campaign), store=work)
    curate(work, "--apply")
    refspecs = ["main", "refs/kb/traces/*:refs/kb/traces/*"]
    pushed = git("push", "--porcelain", "origin", *refspecs, cwd=work.location, check=False)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    card = card_for(live_cards(work), "num-warps-up+rows-per-program-up")
    path = work.location / rec.path_for(card)
    card["payload"]["best_gain_pct"] = 55.0
    path.write_text(json.dumps(card, indent=1) + "\n")
    git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-am",
        f"kb insert {card['id']}\n\nKB-Action: insert\nKB-Record: {card['id']}",
        cwd=work.location)  # fmt: skip
    refused = git("push", "--porcelain", "origin", "main", cwd=work.location, check=False)
    assert refused.returncode != 0
    assert "technique-card: payload.best_gain_pct" in refused.stdout + refused.stderr


@pytest.mark.slow
def test_query_serves_cards_first_for_a_family_question_with_their_evidence(mined):
    curate(mined, "--apply")
    done = kb("query", "--family", "rmsnorm-and-fused-add-rmsnorm", "--json", "--limit", "20",
              "--store", str(mined.location))  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    served = json.loads(done.stdout)["records"]
    types = [r["type"] for r in served]
    assert types[:3] == ["technique-card"] * 3 and "strategy" in types[3:]
    for hit in served[:3]:
        card = mined.read_record(hit["id"]).data
        counts = hit["evidence_counts"]
        assert counts["attempts"] == card["payload"]["attempts"]
        assert counts["cited_records"] == len(card["retrieval"]["links"]["cited_records"])
    assert all("evidence_counts" not in r for r in served[3:])
    # an exact question (an operator's strategies) keeps its own order
    exact = kb("query", "--family", "rmsnorm-and-fused-add-rmsnorm", "--type", "strategy",
               "--json", "--store", str(mined.location))  # fmt: skip
    assert {r["type"] for r in json.loads(exact.stdout)["records"]} == {"strategy"}


@pytest.mark.slow
def test_the_optimizer_context_carries_the_cards(mined):
    from gitkb.optimize.knowledge import gather, prompt_section

    curate(mined, "--apply")
    knowledge = gather(str(mined.location), "hopper", "rmsnorm-and-fused-add-rmsnorm",
                       kernel_source(0))  # fmt: skip
    cards = [r for r in knowledge.records if r["type"] == "technique-card"]
    assert len(cards) == 3 and all(c["evidence_counts"]["cited_records"] >= 1 for c in cards)
    assert knowledge.asked[0]["type"] == "technique-card"
    assert "evidence_counts" in "\n".join(prompt_section(knowledge.records))


@pytest.mark.slow
def test_a_staged_card_alone_is_left_to_the_store_gates(mined, tmp_path, monkeypatch):
    from gitkb.hooks.local import pre_commit

    curate(mined, "--apply")
    card = card_for(live_cards(mined), "vector-loads")
    folder = tmp_path / "staged"
    path = folder / rec.path_for(card)
    path.parent.mkdir(parents=True)
    path.write_bytes(rec.dumps(card))
    monkeypatch.chdir(folder)
    assert pre_commit([rec.path_for(card)]) == []
    card["payload"]["kept"] = 3  # still judged where the evidence is: at admission
    with pytest.raises(AdmissionRefused, match="payload.kept"):
        mined.admit(rec.dumps(_tampered(card, "none")), "insert")
