"""What a technique card pools: a parameter or a named setting only with its direction, so
levers that went up and levers that went down never share a card; the diff, read first,
gives the direction where the words do not."""

from __future__ import annotations

from gitkb.gates import card_evidence as ce

DIFF_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"


def strategy(n: int, change: str, diff: str = "") -> dict:
    implementation = {"format": DIFF_FORMAT, "snippet": diff} if diff else {"format": "none"}
    return {
        "id": f"nvidia.h100.triton.rmsnorm.s{n:02d}",
        "type": "strategy",
        "status": "active",
        "retrieval": {
            "scope": {
                "vendor": "nvidia",
                "arch": "hopper",
                "dsl": "triton",
                "operator_family": "rmsnorm",
                "product": "h100",
            },
            "technique_tags": [],
        },
        "evidence": {"raw": {"source_repo": f"kernel_opt_00{n}_rmsnorm"}},
        "payload": {"change": change, "implementation": implementation},
    }


def test_a_parameter_whose_direction_is_unknown_counts_toward_no_card():
    for said in ("warps=4", "set num_warps=4", "retuned num_warps", "num_warps 4"):
        assert ce.technique_of(strategy(1, said)) is None, said
        assert ce.key_of(strategy(1, said)) is None, said
    # a named setting with no value named is no card either
    assert ce.key_of(strategy(1, "tune the eviction policy")) is None
    # a construct has no direction to lose
    assert ce.technique_of(strategy(1, "a persistent grid over the rows")) == "persistent-kernel"


def test_the_direction_comes_from_the_words_or_else_the_diff():
    assert ce.technique_of(strategy(1, "warps=4 (was 2)")) == "num-warps-up"
    assert ce.technique_of(strategy(1, "warps=4 (was 8)")) == "num-warps-down"
    diff = "-    kernel[grid](x, num_warps=2)\n+    kernel[grid](x, num_warps=4)\n"
    assert ce.technique_of(strategy(1, "set num_warps=4", diff)) == "num-warps-up"


def test_levers_that_went_both_ways_never_share_a_card():
    said = ["warps=4", "warps=4 (was 2)", "set num_warps=4", "warps=4 (was 8)",
            "more warps", "fewer warps", "num_warps 8 -> 4", "num_warps 4 -> 8"]  # fmt: skip
    records = {r["id"]: r for r in (strategy(n, s) for n, s in enumerate(said, 1))}
    groups = ce.pooled(records)
    assert {k.technique for k in groups} == {"num-warps-up", "num-warps-down"}
    for key, members in groups.items():
        assert {ce.technique_of(r) for r in members.values()} == {key.technique}
    pooled = {i for members in groups.values() for i in members}
    unknown = {i for i, r in records.items() if r["payload"]["change"] in said[::2][:2]}
    assert [records[i]["payload"]["change"] for i in sorted(unknown)] == [
        "warps=4", "set num_warps=4"
    ]  # fmt: skip
    assert pooled == set(records) - unknown
