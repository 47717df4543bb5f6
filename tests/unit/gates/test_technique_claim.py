"""The technique-claim gate: a trace's words never vouch for a code change its own diff
does not show, they vouch where there is no diff or for what no code of the record's dsl
shows, and what mining tags is what the gate admits."""

from __future__ import annotations

import pytest
from helpers import ROOT

from gitkb.gates.technique_claim import claim_findings
from gitkb.testing import technique_levers
from gitkb.trace import techniques

DIFF_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"
CONSTANT = "-    y = x * 2\n+    y = x * 3\n"


def strategy(change: str, diff: str, tag: str | None = None, dsl: str = "triton") -> dict:
    implementation = {"format": DIFF_FORMAT, "snippet": diff} if diff else {"format": "none"}
    return {
        "type": "strategy",
        "retrieval": {
            "scope": {"dsl": dsl, "operator_family": "rmsnorm"},
            "technique_tags": [tag] if tag else [],
        },
        "payload": {"change": change, "implementation": implementation},
    }


def findings(record: dict) -> list[str]:
    return [f.message for f in claim_findings("r", record)]


def test_words_never_vouch_for_a_code_change_the_diff_does_not_show():
    said = findings(strategy("num_warps 4 -> 8", CONSTANT, "num-warps-up"))
    assert len(said) == 1
    assert "num-warps-up" in said[0] and "code signature its own diff does not show" in said[0]
    # the same words with no diff are the only evidence there is: they vouch
    assert findings(strategy("num_warps 4 -> 8", "", "num-warps-up")) == []
    # the diff that shows the change vouches, whatever the words say
    shown = "-    kernel[grid](x, num_warps=4)\n+    kernel[grid](x, num_warps=8)\n"
    assert findings(strategy("retune the launch", shown, "num-warps-up")) == []


def test_words_vouch_for_what_no_code_of_the_records_dsl_shows():
    # a fusion has no code signature: its words vouch beside any diff
    fused = strategy("fuse the bias into the load loop", CONSTANT, "fuse-into-load-loop")
    assert findings(fused) == []
    # Triton code never spells a vector type: a Triton lever's words vouch for it
    assert findings(strategy("vectorized 128-bit loads", CONSTANT, "vector-loads")) == []
    # CUDA code does (float4): a CUDA diff that shows none refuses the words
    cuda = strategy("vectorized 128-bit loads", CONSTANT, "vector-loads", dsl="cuda")
    assert any("code signature" in m for m in findings(cuda))


def test_a_diff_of_comments_alone_is_still_the_diff():
    commented = "-    # num_warps=4\n+    # num_warps=8\n"
    assert findings(strategy("num_warps 4 -> 8", commented, "num-warps-up"))


def _levers() -> list[dict]:
    data = ROOT / "tests" / "data"
    every = technique_levers.labeled_set(data / "techniques_labeled.json")
    every += technique_levers.labeled_set(data / "techniques_held_out.json")
    return [lv for lv in every if "sentence" in lv]


@pytest.mark.parametrize("lever", _levers(), ids=lambda lv: lv["id"])
def test_what_mining_tags_the_gate_admits(lever):
    diff = technique_levers.lever_diff(lever.get("diff", ""))
    record = strategy(lever["sentence"], diff, "the-traces-own-phrase", lever["dsl"])
    detection = techniques.tag_record(record)
    if detection.categorized:
        assert record["retrieval"]["technique_tags"][0] == detection.key
    assert findings(record) == []
    # the index cache derives what mining tagged
    assert techniques.record_technique(record).key == detection.key
