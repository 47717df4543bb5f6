"""The final pick's rules: who contends beside the best, pooling, and who wins."""

from __future__ import annotations

import pytest

from gitkb.optimize.bundle import Budget, Case
from gitkb.optimize.evaluate import Measurement
from gitkb.optimize.providers import Candidate
from gitkb.optimize.runoff import contenders, pick, pooled
from gitkb.optimize.scoring import score
from gitkb.optimize.state import BestSoFar

CASES = [Case("p", {}, 1.0, True, {})]


def _score(latency, baseline=None):
    response = {"cases": [{"case_id": "p", "passed": True, "samples_us": [latency] * 3}]}
    return score(response, CASES, baseline)


BASE = _score(100.0)
BEST = BestSoFar("r001-c000", "best", _score(50.0, BASE), 2.0, 1, {}, {})


def test_contenders_are_the_closest_distinct_runners_up():
    measured = [
        (1.9, "r001-c001", Candidate("a"), "a"),
        (1.95, "r001-c002", Candidate("a"), "a"),  # the same code: measured once
        (1.8, "r001-c003", Candidate("best"), "best"),  # the best's own code
        (1.0, "r001-c004", Candidate("c"), "c"),  # below the band
        (1.7, "r001-c005", Candidate("d"), "d"),
        (1.6, "r001-c006", Candidate("e"), "e"),  # past the number of contenders
    ]
    assert [c.exp_id for c in contenders(measured, BEST)] == ["r001-c002", "r001-c005"]


def test_a_source_with_an_unmeasured_pass_has_no_pooled_score():
    measured = Measurement(_score(50.0, BASE))
    assert pooled([measured, Measurement(None, ["build failed"])], CASES, BASE) is None
    found = pooled([measured, measured], CASES, BASE)
    assert found is not None and found[1].aggregate == pytest.approx(2.0)


def test_the_contender_that_beats_the_fresh_best_by_most_wins():
    runners = contenders(
        [(1.9, "r001-c001", Candidate("a"), "a"), (1.8, "r001-c002", Candidate("b"), "b")], BEST
    )
    budget = Budget(min_speedup=1.0, max_cv=0.5)
    faster = pooled([Measurement(_score(40.0, BASE))], CASES, BASE)
    ran, picked = pick(runners, [None, faster], 2.0, BASE, budget)
    assert [(r["experiment"], r["won"], r["again"]) for r in ran] == [
        ("r001-c001", False, None),
        ("r001-c002", True, pytest.approx(2.5)),
    ]
    assert picked is not None and picked[0].exp_id == "r001-c002"
    assert pick(runners, [None, faster], 3.0, BASE, budget)[1] is None  # not above the best
