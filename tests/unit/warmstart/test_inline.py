"""The inline resolve answer's byte budget: the least useful text goes first, only as much as
the budget needs, each omission named, and the answer as printed never over it."""

from __future__ import annotations

import pytest

from gitkb.errors import GitkbError
from gitkb.warmstart import inline


def _answer() -> dict:
    def code(n: int) -> dict:
        return {"kind": "diff", "text": "+x = 1\n" * n, "dispatch": None}

    ranks = [
        {"rank": 1, "id": "a.one", "code": code(60), "reference": "r" * 500,
         "alternates": [{"id": "a.alt", "code": code(40)}]},
        {"rank": 2, "id": "b.two", "code": code(50), "reference": "é" * 300, "alternates": []},
    ]  # fmt: skip
    reference_only = [{"id": "c.ref", "reason": "no fit", "reference": "p" * 200}]
    return {"read_reason": "read", "ranks": ranks, "reference_only": reference_only}


ORDER = [("a.alt", "code"), ("c.ref", "reference"), ("b.two", "reference"),
         ("a.one", "reference"), ("b.two", "code"), ("a.one", "code")]  # fmt: skip


def test_no_budget_leaves_the_answer_alone():
    assert inline.fit(_answer(), None) == _answer()


def test_a_roomy_budget_omits_nothing():
    fitted = inline.fit(_answer(), 100_000)
    assert fitted["budget"] == {"max_bytes": 100_000, "omitted": []}


def _printed_size(dropped: int, max_bytes: int) -> int:
    """The answer's size as printed with the first ``dropped`` omissions of ORDER made."""
    answer = _answer()
    answer["budget"] = {"max_bytes": max_bytes, "omitted": []}
    for holder_id, field in ORDER[:dropped]:
        _holder(answer, holder_id)[field] = None
        answer["budget"]["omitted"].append({"id": holder_id, "field": field})
    return inline.size(answer)


@pytest.mark.parametrize("dropped", range(1, len(ORDER) + 1))
def test_text_goes_in_order_and_only_as_much_as_needed(dropped):
    """With a budget that fits only after ``dropped`` omissions, those are the first
    ``dropped`` of the order: one fewer would not have fit, one more is not made."""
    budget = 1
    for _ in range(3):  # the answer prints its own budget: settle on a size that holds it
        budget = _printed_size(dropped, budget)
    assert _printed_size(dropped, budget) == budget < _printed_size(dropped - 1, budget)
    fitted = inline.fit(_answer(), budget)
    omitted = [(o["id"], o["field"]) for o in fitted["budget"]["omitted"]]
    assert omitted == ORDER[:dropped]
    assert inline.size(fitted) <= budget
    for holder_id, field in omitted:
        assert _holder(fitted, holder_id)[field] is None


def test_a_budget_below_the_bare_answer_is_a_usage_error():
    with pytest.raises(GitkbError, match="no code or references in it") as raised:
        inline.fit(_answer(), 300)
    assert raised.value.exit_code == 2


def _holder(answer: dict, wanted: str) -> dict:
    for rank in answer["ranks"]:
        if rank["id"] == wanted:
            return rank
        for alternate in rank["alternates"]:
            if alternate["id"] == wanted:
                return alternate
    return next(e for e in answer["reference_only"] if e["id"] == wanted)
