"""Warm start from a knowledge base (``--warm-start on|reference --kb STORE``).

``offer`` resolves the kernel against the store before anything runs (a bad store
or hardware is a setup error, and the audit folder exists before any verdict).
With ``on``, ``adopt`` judges the offered ranks in order through the same gate as
round candidates (each costs a candidate slot of the budget), attests every one
judged, and adopts the fastest that is correct and faster; ``recheck_failed``
attests the adopted record ``failed`` when it was the finalist and failed the final
re-check. ``speedups`` keeps a gain that came from the store apart from the
run's own.
"""

from __future__ import annotations

from collections.abc import Callable

from gitkb.errors import GitkbError
from gitkb.optimize import scoring
from gitkb.optimize.providers import warmstart
from gitkb.optimize.setup import RunSetup, hardware_tokens
from gitkb.optimize.state import BestSoFar, Judgement, WarmStart
from gitkb.record.curation import workload_key
from gitkb.warmstart.references import note_tried


def offer(setup: RunSetup, provider: warmstart.Provider) -> WarmStart:
    """Resolve the kernel against the store of ``provider`` into ``warm_start/``; returns
    the findings so far (what was offered; nothing judged yet)."""
    folder = setup.output / "warm_start"

    workload = workload_key([c.case_id for c in setup.bundle.cases])
    answer = provider.offer(
        setup.operator, hardware_tokens(setup.bundle.target)[0], setup.baseline_source, folder,
        workload,
    )  # fmt: skip
    references = folder / "kb_references"
    report = {
        "mode": setup.config.warm_start,
        "store": str(setup.config.kb),
        "store_commit": answer["commit"],
        "read_reason": answer["read_reason"],
        "read_error": answer.get("read_error"),
        "kernel": answer["kernel"],
        "offered": [
            {k: r[k] for k in ("rank", "id", "type", "speedup", "comparable", "applies")}
            for r in answer["ranks"]
        ],
        "references": str(references),
        "candidates": [],
        "adopted": None,
    }
    setup.say(
        f"[gitkb] warm start mode={setup.config.warm_start} "
        f"read_reason={answer['read_reason']} offered={len(answer['ranks'])}"
        + (f" (cold start: {answer['read_error']})" if answer.get("read_error") else "")
    )
    return WarmStart(report, references, provider)


def adopt(
    setup: RunSetup,
    warm_start: WarmStart,
    propose: Callable[[str], warmstart.Offered | None],
    judge: Callable[[warmstart.Offered, str], Judgement],
    slots: int,
) -> BestSoFar | None:
    """Judge up to ``slots`` offered ranks (they count as candidates of the run's budget),
    noting each in ``warm_start``; returns the adopted one as the new best, or None.

    Every offer is judged against the kernel as the run found it, and the best verified
    one is adopted (not the first that beats the baseline: another shape's kernel often
    does, while a later rank is this workload's optimum). ``propose(exp_id)`` asks the
    warm-start provider for its next candidate; ``judge(candidate, exp_id)`` runs it
    through the loop's gate and returns its judgement."""
    judged: dict[str | None, tuple[str, str]] = {}  # source key -> (outcome, experiment)
    verified: list[tuple[float, int, warmstart.Offered, Judgement]] = []
    index = 0
    while evaluations(warm_start) < slots:
        index += 1
        exp_id = f"ws-{index:02d}"
        offered = propose(exp_id)
        if offered is None:
            break
        best = max((v[0] for v in verified), default=None)
        claimed = offered.record_speedup
        if best is not None and claimed is not None and claimed < best:
            # It claims less than an offer already verified here: not worth a slot.
            warm_start.report.setdefault("not_judged", []).append(
                {"record": offered.record_id, "rank": offered.rank,
                 "record_speedup": offered.record_speedup,
                 "why": f"claims {offered.record_speedup}x, below the {best:.4g}x verified here"}
            )  # fmt: skip
            continue
        key = scoring.source_key(offered.source) if offered.source is not None else None
        outcome = judge(offered, exp_id)
        experiment = outcome.experiment
        # A rank whose code an earlier rank already was (a strategy whose diff yields the
        # reference kernel) shares that rank's verdict: the same code ran on this box.
        verdict, same_as = judged.get(key) or (warmstart.outcome_of(experiment, offered), None)
        judged.setdefault(key, (verdict, exp_id))
        entry = {
            "experiment": exp_id,
            "record": offered.record_id,
            "rank": offered.rank,
            "record_speedup": offered.record_speedup,
            "aggregate_speedup": experiment["aggregate_speedup"],
            "outcome": verdict,
            "diagnostics": experiment["diagnostics"][:3],
            "same_code_as": same_as,
            "attest_commit": None,
        }
        evidence = {"trace": setup.trace_label, "experiment": same_as or exp_id}
        if experiment["aggregate_speedup"] is not None:
            evidence["aggregate_speedup"] = f"{experiment['aggregate_speedup']:.4f}"
        if experiment["diagnostics"] and verdict != "validated" and same_as is None:
            evidence["reason"] = " ".join(experiment["diagnostics"][0].split())[:200]
        try:
            entry["attest_commit"] = warm_start.provider.attest(offered, verdict, evidence)
        except GitkbError as exc:  # the run's verdict stands; the ledger says why not
            entry["attest_error"] = exc.message
        warm_start.report["candidates"].append(entry)
        setup.say(f"[gitkb] warm start {exp_id} record={offered.record_id} outcome={verdict}")
        if outcome.promoted:
            verified.append((experiment["aggregate_speedup"] or 0.0, -index, offered, outcome))
    if not verified:
        _note_tried(setup, warm_start)
        return None
    _, _, offered, outcome = max(verified, key=lambda v: (v[0], v[1]))
    warm_start.adopted_source = offered.source
    warm_start.report["adopted"] = {
        "experiment": outcome.experiment["id"],
        "record": offered.record_id,
        "aggregate_speedup": outcome.experiment["aggregate_speedup"],
    }
    _note_tried(setup, warm_start)
    return outcome.best


def evaluations(warm_start: WarmStart) -> int:
    """The warm-start candidates that were measured here (a rank whose code an earlier rank
    already was, or that did not fit, cost no evaluation): the round slots they took."""
    return sum(
        1
        for c in warm_start.report["candidates"]
        if c["same_code_as"] is None and c["outcome"] != "inapplicable"
    )


def recheck_failed(
    setup: RunSetup, warm_start: WarmStart, revalidation: dict | None
) -> dict | None:
    """When the adopted code was the finalist and failed the final re-check, the run falls
    back to the baseline: the record's ledger gets a ``failed`` attestation saying so, so
    its ``validated`` one from the judging is not the last word. Returns what was written."""
    adopted = warm_start.adopted
    if not adopted or revalidation is None or revalidation["passed"]:
        return None
    if revalidation.get("experiment") != adopted["experiment"]:
        return None
    reason = " ".join("; ".join(revalidation["reasons"]).split())[:200]
    evidence = {"trace": setup.trace_label, "experiment": "final",
                "reason": f"adopted code failed the final re-check: {reason}"}  # fmt: skip
    if revalidation.get("aggregate_speedup") is not None:
        evidence["aggregate_speedup"] = f"{revalidation['aggregate_speedup']:.4f}"
    found = {"record": adopted["record"], "outcome": "failed", "attest_commit": None}
    try:
        found["attest_commit"] = warm_start.provider.attest_record(
            adopted["record"], "failed", evidence
        )
    except GitkbError as exc:
        found["attest_error"] = exc.message
    adopted["recheck"] = found
    setup.say(f"[gitkb] warm start: adopted {adopted['record']} failed the final re-check")
    return found


def _note_tried(setup: RunSetup, warm_start: WarmStart) -> None:
    """The judged ranks that were not adopted go under "Reference only" in the audit
    folder's index, with their outcome: the round providers read their prose, not code."""
    prose = {
        r["id"]: r.get("prose_path") for r in (warm_start.provider.answer or {}).get("ranks", [])
    }
    tried = [
        dict(c, prose_path=prose.get(c["record"]))
        for c in warm_start.report["candidates"]
        if c["outcome"] != "validated"
    ]
    if warm_start.references.is_dir():
        note_tried(warm_start.references, tried)


def speedups(warm_start: WarmStart, winner: BestSoFar | None, aggregate: float | None) -> dict:
    """total_speedup: the final kernel vs the untouched baseline; incremental_speedup: vs the
    adopted warm start (the baseline when nothing was adopted), so a gain that came from the
    store is never reported as the run's own work."""
    total = aggregate if aggregate is not None else 1.0
    adopted = warm_start.adopted
    if adopted is None:
        incremental = total
    elif winner is not None and winner.source == warm_start.adopted_source:
        incremental = 1.0  # the final kernel is the adopted start
    else:
        incremental = total / adopted["aggregate_speedup"]
    return {"total_speedup": total, "incremental_speedup": incremental}
