"""git kb import tlx-knowledge: each entry of the TLX agent's knowledge a documented
technique card (no numbers: TLX's documents copy none), its words as written, mapped onto
the technique vocabulary by the index cache; hardware gitkb does not know, and gitkb's own
export, skipped with the reason."""

from __future__ import annotations

import json

import pytest
from helpers import kb
from helpers.tlx_trees import GFX942, tlx_tree

from gitkb.gates import card_evidence
from gitkb.importers import tlx_entries, tlx_knowledge
from gitkb.trace import techniques


def test_an_entry_is_a_top_level_bullet_under_a_section():
    found = list(tlx_entries.entries(GFX942))
    assert [e.section for e in found] == [
        "1. Mechanism", "1. Mechanism", "2. Method", "3. Open: no evidence either way"
    ]  # fmt: skip
    first = found[0]
    assert first.lead == "A GROUP_M swizzle of the program ids keeps operand tiles in one L2."
    assert first.text.endswith("only when the launch order is remapped.")
    # no bold lead: the first sentence leads
    assert found[3].lead == "Whether waves_per_eu matters here; it has never been swept."


@pytest.mark.slow
def test_tlx_knowledge_entries_become_documented_technique_cards(store, tmp_path):
    root = tlx_tree(tmp_path)
    done = kb("import", "tlx-knowledge", str(root), "--json", "--store", str(store.location))
    assert done.returncode == 0, done.stderr.decode()
    report = json.loads(done.stdout)
    assert report["imported"] == 7, report
    skipped = {s["entry"]: s["reason"] for s in report["skipped"]}
    assert "no GPU gitkb knows" in skipped["harnesses/host/targets/vector_add/"
                                           "optimization_guidance.md"]  # fmt: skip
    assert "name no GPU" in skipped["knowledge/nvidia/mystery/manifest.json"]
    cards = {e["id"]: store.read_record(e["id"]).data for e in store.list(type="technique-card")}
    assert len(cards) == 7
    for card in cards.values():
        # documented, unmeasured, no aggregate: what clean-1.3 holds for hand-written cards
        assert card["evidence"]["summary"]["confidence"] == "documented"
        assert card["worth"]["gain"] == {"basis": "qualitative", "kind": "none", "pct": None,
                                         "metrics": []}  # fmt: skip
        assert not card_evidence.states_numbers(card)
        assert card["evidence"]["raw"]["detail_file"].startswith("tlx:")
    by_lead = {c["payload"]["technique"]: c for c in cards.values()}
    swizzle = by_lead["A GROUP_M swizzle of the program ids keeps operand tiles in one L2."]
    assert swizzle["retrieval"]["scope"]["arch"] == "cdna3"
    assert swizzle["payload"]["when"] == "1. Mechanism"
    gemm = by_lead["Accumulate in fp32."]
    assert gemm["level"] == "operator" and gemm["retrieval"]["scope"]["operator_family"] == "gemm"
    # the section carries the document's own standing for an entry
    assert (
        by_lead["Whether waves_per_eu matters here; it has never been swept."]["payload"]["when"]
        == "3. Open: no evidence either way"
    )
    # prose is scrubbed as every importer's: a markdown page name is not served
    method = by_lead["Warm the clocks continuously before one timed window."]
    assert "bench.md" not in method["payload"]["what"]
    # the cache maps the words onto the vocabulary; words it does not know stay as written
    listed = kb("query", "--list-techniques", "--store", str(store.location))
    names = set(listed.stdout.decode().split())
    assert {"l2-tile-swizzle", "warp-specialization", "accumulator-precision-float32",
            "tcgen05-mma"} <= names  # fmt: skip
    assert techniques.record_technique(method).key == ""
    assert method["retrieval"]["technique_tags"] == [
        "warm-the-clocks-continuously-before-one-timed-wi"
    ]
    checked = kb("validate", str(store.location))
    assert checked.returncode == 0, checked.stdout.decode()

    # again: nothing new, no commit; gitkb's own export is not taken for TLX's knowledge
    tip = store.tip
    again = kb("import", "tlx-knowledge", str(root), "--json", "--store", str(store.location))
    assert json.loads(again.stdout)["imported"] == 0 and store.tip == tip
    out = tmp_path / "ours"
    assert tlx_knowledge.export_tree(store, out) > 0
    ours = kb("import", "tlx-knowledge", str(out), "--json", "--store", str(store.location))
    mirrored = json.loads(ours.stdout)
    assert mirrored["imported"] == 0 and store.tip == tip
    assert mirrored["skipped"] and all("a gitkb export" in s["reason"] for s in mirrored["skipped"])


@pytest.mark.slow
def test_not_a_tlx_tree(store, tmp_path):
    (tmp_path / "empty").mkdir()
    done = kb("import", "tlx-knowledge", str(tmp_path / "empty"), "--store", str(store.location))
    assert done.returncode == 1 and b"no TLX knowledge documents" in done.stderr
