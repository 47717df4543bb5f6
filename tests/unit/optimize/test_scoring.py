"""Scoring arithmetic, pre-evaluation rejections and the promotion rules."""

from __future__ import annotations

import math

import pytest

from gitkb.optimize.bundle import Case
from gitkb.optimize.scoring import (
    cv,
    decide,
    median,
    percentile,
    pooled,
    precheck,
    score,
    source_key,
    weighted_geomean,
)


def test_statistics():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.95) == pytest.approx(4.8)
    assert percentile([10.0], 0.95) == 10.0
    assert cv([5.0]) == 0.0
    # sample standard deviation (n - 1): values 2, 4 -> sd sqrt(2), mean 3
    assert cv([2.0, 4.0]) == pytest.approx(math.sqrt(2) / 3)
    assert weighted_geomean([2.0, 8.0], [1.0, 1.0]) == pytest.approx(4.0)
    assert weighted_geomean([2.0, 8.0], [3.0, 1.0]) == pytest.approx(
        math.exp((3 * math.log(2) + math.log(8)) / 4)
    )
    assert math.isnan(weighted_geomean([], []))


CASES = [
    Case("p", {}, 1.0, True, {}),
    Case("u", {}, 1.0, False, {}),
]


def _eval(p_samples, u_samples, p_ok=True, u_ok=True, p_profile=None):
    def case(cid, samples, ok, profile):
        entry = {"case_id": cid, "passed": ok, "samples_us": samples if ok else None}
        if profile is not None:
            entry["profile"] = profile
        return entry

    return {"cases": [case("p", p_samples, p_ok, p_profile), case("u", u_samples, u_ok, None)]}


BASE = score(_eval([100.0] * 3, [50.0] * 3, p_profile={"duration_us": 10.0}), CASES, None)


def test_score_speedups_and_aggregate():
    cand = score(_eval([50.0] * 3, [25.0] * 3), CASES, BASE)
    assert cand.case("p").speedup == 2.0 and cand.aggregate == pytest.approx(2.0)
    # a failed unprotected case is left out of the aggregate and kept as a diagnostic
    cand = score(_eval([50.0] * 3, [], u_ok=False), CASES, BASE)
    assert cand.aggregate == pytest.approx(2.0) and cand.case("u").speedup is None


def test_pooled_measurements_score_as_one():
    # one slow pass and two normal ones: the pooled median is the normal latency
    passes = [score(_eval([p] * 3, [25.0] * 3), CASES, BASE) for p in (150.0, 50.0, 50.0)]
    assert pooled(passes, CASES, BASE).aggregate == pytest.approx(2.0)
    assert pooled(passes[:1], CASES, BASE).aggregate == pytest.approx(math.sqrt(2 / 3 * 2))
    # a case fails the pool when it failed in any pass
    broken = [*passes, score(_eval([50.0] * 3, [], u_ok=False), CASES, BASE)]
    assert not pooled(broken, CASES, BASE).case("u").passed


def test_failed_protected_case_blocks_promotion_unprotected_does_not():
    blocked = score(_eval([], [10.0] * 3, p_ok=False), CASES, BASE)
    verdict = decide(blocked, BASE, 1.0, 1.02, 0.1)
    assert not verdict.promoted and "protected case failed: p" in verdict.reasons[0]
    fine = score(_eval([50.0] * 3, [], u_ok=False), CASES, BASE)
    assert decide(fine, BASE, 1.0, 1.02, 0.1).promoted


def test_noisy_timing_blocks():
    noisy = score(_eval([40.0, 60.0, 80.0], [25.0] * 3), CASES, BASE)
    verdict = decide(noisy, BASE, 1.0, 1.02, 0.1)
    assert not verdict.promoted and "noisy timing" in verdict.reasons[0]


def test_profiled_duration_regression_blocks_missing_reading_does_not():
    slower = score(_eval([50.0] * 3, [25.0] * 3, p_profile={"duration_us": 10.2}), CASES, BASE)
    verdict = decide(slower, BASE, 1.0, 1.02, 0.1)
    assert not verdict.promoted and "profiled duration of p regressed" in verdict.reasons[0]
    within = score(_eval([50.0] * 3, [25.0] * 3, p_profile={"duration_us": 10.09}), CASES, BASE)
    assert decide(within, BASE, 1.0, 1.02, 0.1).promoted
    unread = score(_eval([50.0] * 3, [25.0] * 3, p_profile={"error": "no ncu"}), CASES, BASE)
    assert decide(unread, BASE, 1.0, 1.02, 0.1).promoted


def test_threshold_best_and_near_threshold_rerun():
    cand = score(_eval([50.0] * 3, [25.0] * 3), CASES, BASE)
    assert not decide(cand, BASE, 2.0, 1.02, 0.1).promoted  # not strictly above the best
    assert not decide(cand, BASE, 1.0, 3.0, 0.1).promoted  # below min_speedup
    near = score(_eval([100 / 1.025] * 3, [50 / 1.025] * 3), CASES, BASE)
    assert decide(near, BASE, 1.0, 1.02, 0.1).rerun
    judged = decide(near, BASE, 1.0, 1.02, 0.1, allow_rerun=False)
    assert judged.promoted and not judged.rerun


CURRENT = (
    "import math\n\nN = 4\n\n\ndef kernel(x):\n    return x * N\n\n\nclass Helper:\n    pass\n"
)


def test_precheck_rejections():
    assert precheck(CURRENT.replace("N = 4", "N = 8"), CURRENT, set()) is None
    assert precheck("def kernel(:\n", CURRENT, set()).startswith("not valid Python")
    missing = CURRENT.replace("class Helper:\n    pass\n", "HELPER = None\n# padding padding\n")
    assert "Helper" in precheck(missing, CURRENT, set())
    short = "def kernel(x):\n    return x\nclass Helper: pass\n"
    assert precheck(short, CURRENT, set()).startswith("shortened")
    assert precheck("\n" + CURRENT + "\n\n", CURRENT, {source_key(CURRENT)}) == (
        "duplicate of an earlier experiment"
    )
