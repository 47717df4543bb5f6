"""The optimization loop: baseline, rounds of candidates, promotion, revalidation, commit.

``run(config)`` is the whole of ``git kb optimize`` as a library call: it writes
the output folder (result.json, experiments/, trace/, bundle/, ...), prints the
reviewer's log through ``config.progress`` and returns the final document with
its exit code: 0 a winner, 2 no winner, 3 a winner whose commit failed, 1 a run
stopped because the frozen bundle changed. Setup errors (a bad bundle, a missing
agent, a bundle that fails validation) raise GitkbError (exit 1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from gitkb.errors import GitkbError
from gitkb.optimize import (
    commit,
    experiments,
    knowledge,
    outputs,
    profiling,
    scoring,
    warm,
    writeback,
)
from gitkb.optimize import runoff as final_pick
from gitkb.optimize.evaluate import Measurement, diagnose, measure, merge_diagnostics
from gitkb.optimize.experiments import (
    announce,
    decide_line,
    exclusion,
    progress_line,
    record,
    stage_line,
)
from gitkb.optimize.freeze import BundleChanged, KernelTouched
from gitkb.optimize.knowledge import Briefing
from gitkb.optimize.providers import Candidate, ProposalContext
from gitkb.optimize.revalidate import revalidate
from gitkb.optimize.scoring import Score
from gitkb.optimize.setup import CommitRefused, RunConfig, RunSetup, hardware_tokens, prepare
from gitkb.optimize.state import BestSoFar, Judgement, RunState
from gitkb.optimize.trace_writer import dumps, memory_record
from gitkb.optimize.validation import validate

__all__ = ["RunConfig", "RunResult", "result_json", "run"]

EXCLUSIONS_KEPT = 5
EXIT_OK, EXIT_STOPPED, EXIT_NO_WINNER, EXIT_COMMIT_FAILED = 0, 1, 2, 3
result_json = outputs.result_json


@dataclass
class RunResult:
    document: dict
    exit_code: int


class _Loop:
    """The rounds of one run: each step reads the fixed ``setup``, the baseline ``base``
    and the store's ``briefing``, and writes the changing ``state`` (the best so far, what
    was seen and rejected, the trace's version counter, the experiments)."""

    def __init__(
        self, setup: RunSetup, state: RunState, base: Measurement, briefing: Briefing | None
    ) -> None:
        self.setup = setup
        self.state = state
        self.base = base
        if base.score is None:  # validate refuses a baseline it could not measure
            raise GitkbError("the baseline was not measured")
        self.base_score = base.score
        self.briefing = briefing

    @property
    def best(self) -> BestSoFar:
        """The best so far; ``record_baseline`` sets the first."""
        if self.state.best is None:
            raise GitkbError("the run has no best before its baseline is recorded")
        return self.state.best

    # ------------------------------------------------------------------ the baseline

    def record_baseline(self) -> None:
        """The kernel as the run found it, measured: the first best."""
        setup, base = self.setup, self.base
        self.base_score.aggregate = 1.0
        experiment = self.keep(record(setup, "baseline", 0, None, "baseline", None, base, [], 0))
        self.state.best = BestSoFar(
            id="baseline",
            source=setup.baseline_source,
            score=self.base_score,
            aggregate=1.0,
            version=0,
            experiment=experiment,
            profiles=base.profiles,
        )

    def start_trace(self, adopted: str | None) -> None:
        """The trace's v0: the code the run's own work starts from. After a warm start that
        is the adopted record's code (``adopted``: its id), so mining files only what the
        run changed on top of it, measured against it; the adoption itself is the record's
        attestation and confirmation, never a technique of this run."""
        setup, best = self.setup, self.best
        start = best.experiment
        if adopted is not None:
            start = dict(start, status="baseline", category="baseline", change="", hypothesis="")
        setup.trace.baseline(
            best.source,
            memory_record(
                0,
                start,
                best.score,
                best.score,
                None,
                experiments.profiler_evidence(setup, best.profiles),
                reference=best.aggregate,
            ),
            operator=setup.operator,
            description=(setup.bundle.target.get("optimization_guidance") or "")[:500],
            hardware=hardware_tokens(setup.bundle.target),
            label=setup.trace_label,
            adopted=adopted,
            reference=best.aggregate,
        )
        self.state.best = dataclasses.replace(best, version=0)

    # ------------------------------------------------------------------ rounds

    def context(self, exp_id: str) -> ProposalContext:
        setup, state, best = self.setup, self.state, self.best
        briefing = self.briefing
        return ProposalContext(
            experiment_id=exp_id,
            best_source=best.source,
            baseline_source=setup.baseline_source,
            best_id=best.id,
            target=setup.bundle.target,
            cases=[dict(c.raw) for c in setup.bundle.cases],
            best_cases=[c.as_json() for c in best.score.cases],
            best_profile=best.profiles,
            exclusions=state.exclusions[-EXCLUSIONS_KEPT:],
            seen=frozenset(state.seen),
            workspace=setup.output / "workspaces" / exp_id,
            references=state.warm.references if state.warm is not None else None,
            knowledge=briefing.knowledge.records if briefing is not None else [],
            kb_context=briefing.context if briefing is not None else "",
        )

    def rounds(self) -> str:
        """Rounds x candidates per round, best-first; returns the stopping reason."""
        setup, state = self.setup, self.state
        budget = setup.budget
        skip = state.warm_slots_spent
        for round_no in range(1, budget.max_rounds + 1):
            promoted = False
            for index in range(budget.candidates_per_round):  # TLX counts from c000
                if skip:  # this slot went to a warm-start candidate
                    skip -= 1
                    continue
                if setup.elapsed() > budget.max_total_seconds:
                    return "time_budget_exhausted"
                exp_id = f"r{round_no:03d}-c{index:03d}"
                setup.say(stage_line(exp_id, "generating"))
                candidate = setup.provider.propose(self.context(exp_id))
                if candidate is None:
                    return "no_candidates"
                outcome = self.judge(candidate, exp_id, round_no)
                if outcome.promoted:
                    state.best, promoted = outcome.best, True
                else:
                    state.exclusions.append(exclusion(outcome.experiment))
            if not promoted and round_no < budget.max_rounds:
                self.profile_best_deeper(round_no)
        return "round_budget_exhausted"

    def profile_best_deeper(self, round_no: int) -> None:
        """After a dry round: a deep profile of the current best, for the next proposals."""
        setup, state = self.setup, self.state
        if not (setup.config.profile and setup.bundle.has_profile):
            return
        if setup.elapsed() > setup.budget.max_total_seconds:
            return
        exp_id = f"r{round_no:03d}-deep"
        found = measure(
            setup, self.best.source, exp_id, "deep",
            "a round without a promotion: deeper evidence for the next proposals", self.base_score,
        )  # fmt: skip
        if found.measured and found.profiles:
            state.best = dataclasses.replace(self.best, profiles=found.profiles)
        setup.say(f"[gitkb] {exp_id} deep profile of {self.best.id} after a dry round")

    # ------------------------------------------------------------------ one candidate

    def keep(self, experiment: dict) -> dict:
        """Keep a recorded experiment in the run's state (``experiments.json``)."""
        self.state.experiments.append(experiment)
        return experiment

    def judge(
        self, candidate: Candidate, exp_id: str, round_no: int, traced: bool = True
    ) -> Judgement:
        """Check, evaluate and decide one candidate; record it; commit it to the trace
        (``traced``; a warm-start candidate is not: its verdict is an attestation)."""
        setup, state, best = self.setup, self.state, self.best
        parent = best.id
        announce(setup, exp_id, candidate)
        source = candidate.source
        if source is None:
            why = candidate.error or "the provider produced no candidate"
            return self.not_evaluated(candidate, exp_id, round_no, why)
        refusal = scoring.precheck(source, best.source, state.seen)
        if refusal:  # never evaluated: TLX's "failed", as for a candidate that raised
            return self.not_evaluated(candidate, exp_id, round_no, f"pre-evaluation: {refusal}")
        state.seen.add(scoring.source_key(source))
        setup.say(stage_line(exp_id, "evaluating"))
        state.version += traced
        version = state.version if traced else None
        measurement, verdict = self.measure_and_decide(candidate, source, exp_id, best.aggregate)
        status, diagnostics = "failed", measurement.diagnostics
        if verdict is not None:
            status = "promoted" if verdict.promoted else "rejected"
            diagnostics = verdict.reasons + measurement.diagnostics
        exp = self.keep(
            record(
                setup,
                exp_id,
                round_no,
                parent,
                status,
                candidate,
                measurement,
                diagnostics,
                version,
            )
        )
        decide_line(setup, exp, best.aggregate)
        score = measurement.score
        if score is not None and score.aggregate is not None and score.protected_pass:
            state.measured.append((score.aggregate, exp_id, candidate, source))
        promoted = _best(exp, source, measurement, version) if status == "promoted" else None
        if version is not None:  # traced
            memory = self.trace_memory(version, exp, measurement, best.aggregate)
            if promoted is None:
                sha = experiments.trace_rejection(setup, exp, measurement, version, memory)
            else:
                sha = self.trace_promotion(
                    version, exp, candidate, measurement, promoted, best.aggregate
                )
            self.feedback(candidate, exp, status, sha)
        return Judgement(status, exp, promoted)

    def trace_memory(
        self, version: int, exp: dict, measurement: Measurement, incumbent: float
    ) -> dict:
        """The trace's memory file for one experiment, measured against ``incumbent``."""
        evidence = experiments.profiler_evidence(self.setup, measurement.profiles)
        memory = memory_record(version, exp, measurement.score, self.base_score, incumbent,
                               evidence, self.setup.trace.reference)  # fmt: skip
        # the trace names the knowledge-base records the proposal drew on, or ruled out
        memory["kb_cited"], memory["kb_excluded_by"] = exp["kb_cited"], exp["kb_excluded_by"]
        return memory

    def trace_promotion(
        self, version: int, exp: dict, candidate: Candidate, measurement: Measurement,
        promoted: BestSoFar, incumbent: float,
    ) -> str:  # fmt: skip
        """Commit a promoted candidate (its new best ``promoted``) to the trace, with its
        gain over ``incumbent``; its sha."""
        memory = self.trace_memory(version, exp, measurement, incumbent)
        title = candidate.commit_title or candidate.change or exp["id"]
        gain_pct = (promoted.aggregate / incumbent - 1) * 100 if incumbent else 0.0
        return self.setup.trace.promoted(version, promoted.source, memory, title, gain_pct)

    def not_evaluated(
        self, candidate: Candidate, exp_id: str, round_no: int, why: str
    ) -> Judgement:
        """A candidate with no source, or one refused before evaluation: ``failed``."""
        best = self.best
        exp = self.keep(
            record(self.setup, exp_id, round_no, best.id, "failed", candidate, None, [why], None)
        )
        decide_line(self.setup, exp, best.aggregate)
        return Judgement("failed", exp)

    def feedback(
        self, candidate: Candidate, experiment: dict, status: str, trace_commit: str
    ) -> None:
        """A measured version's outcome as feedback on the records it cited (--kb)."""
        setup = self.setup
        if self.briefing is None or setup.kb is None:
            return
        given = knowledge.give_feedback(
            setup.kb, setup.trace_label, candidate, status, trace_commit
        )
        if given:
            experiment["kb_feedback"] = given
            outputs_path = setup.output / "experiments" / experiment["id"] / "result.json"
            outputs_path.write_bytes(
                experiments.dumps(outputs.experiment_json(setup.output, experiment))
            )
            setup.say(
                f"[gitkb] {experiment['id']} feedback {given.get('outcome')} on "
                f"{', '.join(given.get('records', [])) or given.get('error', '-')}"
            )

    def measure_and_decide(
        self, candidate: Candidate, source: str, exp_id: str, best_aggregate: float
    ) -> tuple[Measurement, scoring.Verdict | None]:
        """Measure (deep for a scheduling hypothesis), decide, and re-measure with a deep
        profile when the candidate sits near the threshold or its benchmark and profile
        disagree; returns (measurement, verdict or None when nothing was measured)."""
        setup, base = self.setup, self.base_score
        budget = setup.budget
        level, reason = "summary", "candidate"
        if profiling.scheduling(candidate.hypothesis, candidate.change):
            level, reason = "deep", "a scheduling hypothesis needs stall and occupancy evidence"
        measurement = measure(setup, source, exp_id, level, reason, base)
        if measurement.score is None:
            return measurement, None
        score = measurement.score
        verdict = scoring.decide(score, base, best_aggregate, budget.min_speedup, budget.max_cv)
        again = "near-threshold rerun" if verdict.rerun else None
        if again is None and level != "deep":
            disagree = profiling.disagreement(score, base)
            if disagree and profiling.worth_a_deeper_look(score, budget.min_speedup):
                again = f"benchmark and profile disagree ({disagree[0]})"
        if again is None:
            return measurement, verdict
        if verdict.rerun:  # TLX's line for the same step
            line = stage_line(exp_id, "near-threshold-profiling")
            setup.say(f"{line} diagnostics=reason=near_threshold")
        setup.say(f"[gitkb] {exp_id} measured again with a deep profile: {again}")
        measurement = measure(setup, source, f"{exp_id}-rerun", "deep", again, base)
        if measurement.score is None:
            return measurement, None
        return measurement, scoring.decide(
            measurement.score, base, best_aggregate, budget.min_speedup, budget.max_cv,
            allow_rerun=False,
        )  # fmt: skip

    def judge_offered(self, offered: Candidate, exp_id: str) -> Judgement:
        """A warm-start candidate, judged like a round candidate (round 0), kept out of the
        trace: what it did goes to the record's ledger."""
        outcome = self.judge(offered, exp_id, 0, traced=False)
        if not outcome.promoted:
            self.state.exclusions.append(exclusion(outcome.experiment))
        return outcome

    # ------------------------------------------------------------------ the end

    def runoff(self) -> dict | None:
        """The final pick: the best and its closest runners-up (correct, each measured once
        before, a warm-start offer or a round candidate alike) measured again in
        ``final_pick.PASSES`` back-to-back passes (the second in reverse order), each scored on
        its pooled samples, so that one unlucky sample under load does not leave the optimum
        behind a worse setting. A runner-up whose pooled score passes the promotion rules
        against the best's becomes the best (a new version of the trace). Returns the report
        (None: no runner-up to re-measure, or no time left)."""
        setup, best, base = self.setup, self.best, self.base_score
        runners = final_pick.contenders(self.state.measured, best)
        if not runners or setup.elapsed() > setup.budget.max_total_seconds:
            return None
        why = "the final pick: measured again beside the runners-up, on equal terms"
        sources = [(best.id, best.source)] + [(r.exp_id, r.source) for r in runners]
        passes: list[list[Measurement]] = [[] for _ in sources]
        for number in range(final_pick.PASSES):
            order = range(len(sources)) if number % 2 == 0 else reversed(range(len(sources)))
            for index in order:
                exp_id, source = sources[index]
                folder = f"runoff-{exp_id}" + (f"-{number + 1}" if number else "")
                passes[index].append(measure(setup, source, folder, "summary", why, base))
        pooled = [final_pick.pooled(found, setup.bundle.cases, base) for found in passes]
        first = pooled[0][1] if pooled[0] is not None else None
        fresh = first.aggregate if first is not None and first.protected_pass else None
        ran, picked = final_pick.pick(runners, pooled[1:], fresh, base, setup.budget)
        report: dict = {"best": best.id, "best_again": fresh, "contenders": ran, "picked": None}
        setup.say(
            f"[gitkb] runoff: {best.id} again {experiments.fmt(fresh, 4)}x; "
            + ", ".join(f"{c['experiment']} {experiments.fmt(c['again'], 4)}x"
                        for c in ran)
        )  # fmt: skip
        if picked is not None:
            report["picked"] = self.promote_runoff(*picked, fresh or 0.0)
        return report

    def promote_runoff(
        self, runner: final_pick.Contender, found: Measurement, aggregate: float, incumbent: float
    ) -> str:
        """The runner-up the runoff picked (its pooled ``aggregate``), committed to the trace
        as a new version over the best (its gain against the best's fresh measurement);
        returns its experiment id."""
        setup, best, exp_id, candidate = self.setup, self.best, runner.exp_id, runner.candidate
        new_id = f"runoff-{exp_id}"
        self.state.version += 1
        diagnostics = [
            f"runoff: {aggregate:.4f}x against {best.id}'s {incumbent:.4f}x, "
            f"{final_pick.PASSES} passes back to back, samples pooled (first measured {exp_id})"
        ]
        round_no = setup.budget.max_rounds + 1
        exp = record(setup, new_id, round_no, best.id, "promoted", candidate, found,
                     diagnostics, self.state.version)  # fmt: skip
        self.keep(exp)
        decide_line(setup, exp, incumbent)
        promoted = _best(exp, runner.source, found, self.state.version)
        sha = self.trace_promotion(self.state.version, exp, candidate, found, promoted, incumbent)
        self.feedback(candidate, exp, "promoted", sha)
        self.state.best = promoted
        return new_id

    def reverify(self, merged: bytes) -> tuple[bool, str]:
        """The merged file of a dirty target, through the harness: protected cases must pass."""
        found = measure(
            self.setup, merged.decode("utf-8", "replace"), "commit-reverify", "summary",
            "the target was dirty: re-validate the merged file", self.base_score,
        )  # fmt: skip
        score = found.score
        if score is None:
            return False, "; ".join(found.diagnostics)
        cases = [c.as_json() for c in score.cases]  # TLX keeps this one at the root
        (self.setup.output / "commit_revalidation.json").write_bytes(
            experiments.dumps(outputs.performance(cases, score.aggregate))
        )
        if not score.protected_pass:
            return False, f"protected cases failed: {', '.join(score.failed_protected())}"
        return True, ""


def _best(exp: dict, source: str, measurement: Measurement, version: int | None) -> BestSoFar:
    """A promoted candidate as the code the next proposals start from."""
    score = measurement.score
    if score is None or score.aggregate is None:  # decide promotes only a scored aggregate
        raise GitkbError(f"{exp['id']} was promoted without an aggregate speedup")
    return BestSoFar(
        id=exp["id"],
        source=source,
        score=score,
        aggregate=score.aggregate,
        version=version,
        experiment=exp,
        profiles=measurement.profiles,
    )


def _finish(loop: _Loop, stopping: str) -> RunResult:
    """Revalidate the finalist, commit it, write back; write the outputs."""
    setup, state, base = loop.setup, loop.state, loop.base
    winner: BestSoFar | None = None
    final: Measurement | None = None
    final_score: Score | None = None  # the winner's, revalidated
    revalidation: dict | None = None
    runoff_report = loop.runoff()
    best = loop.best  # the runoff may have picked a runner-up
    if best.id != "baseline":
        final, revalidation = revalidate(setup, best, loop.base_score)
        if revalidation["passed"] and final.score is not None:
            winner, final_score = best, final.score
            if setup.config.diagnostic_proton_intra_kernel:
                traces = diagnose(setup, winner.source, "final", "final_winner_diagnostic")
                merge_diagnostics(final, traces)
        else:
            stopping = "finalist_revalidation_failed"
            if state.warm is not None:
                warm.recheck_failed(setup, state.warm, revalidation)
    final_cases = (final_score if final_score is not None else loop.base_score).cases
    setup.say(
        progress_line(
            {
                "id": "final",
                "status": "revalidated" if winner else "baseline",
                "aggregate_speedup": final_score.aggregate if final_score is not None else 1.0,
                "cases": [c.as_json() for c in final_cases],
            }
        )
    )
    commit_result = None
    if winner is not None and final_score is not None and setup.plan is not None:
        setup.frozen.verify("before the winner commit")
        commit_result = _commit_run_winner(
            setup, setup.plan, winner, loop.base_score, final_score, loop.reverify
        )
    ending = outputs.Ending(stopping, winner, final, commit_result, revalidation)
    write_back = None
    if setup.kb is not None:
        write_back = (
            writeback.write_back(setup, setup.kb, state.adopted)
            if winner
            else {"attempted": False, "reason": "no winner"}
        )
    elif setup.config.kb:  # a warm start that found the store unreadable ran cold
        write_back = {"attempted": False, "reason": "the knowledge base could not be read"}
    document = outputs.write(setup, state, ending, base)
    if state.warm is not None:
        document.update(warm.speedups(state.warm, winner, document["final"]["aggregate_speedup"]))
        document["warm_start"] = state.warm.report
    if runoff_report is not None:
        document["runoff"] = runoff_report
    if write_back is not None:
        document["write_back"] = write_back
    if loop.briefing is not None:
        document["knowledge"] = loop.briefing.report()
    outputs.save(setup.output, document)
    if winner is None:
        why = "; ".join(revalidation["reasons"]) if revalidation else stopping
        setup.say(f"[gitkb] no winner: {why[:300]}")
        return RunResult(document, EXIT_NO_WINNER)
    if commit_result is not None and not commit_result["success"]:
        return RunResult(document, EXIT_COMMIT_FAILED)
    return RunResult(document, EXIT_OK)


def run(config: RunConfig) -> RunResult:
    """Run one optimization; see the module docstring. The fixed setup comes from
    ``prepare``, the store's answers (the warm start's offers, the briefing) next, then
    the baseline; the loop's steps read those and write the run's ``RunState``."""
    try:
        setup = prepare(config)
    except CommitRefused as refused:  # TLX: a failed auto_commit on stdout, exit 3, no run
        config.progress(refused.result.event_line())
        return RunResult(refused.result.as_json(), EXIT_COMMIT_FAILED)
    state = RunState(seen={scoring.source_key(setup.baseline_source)})
    if setup.warm is not None:
        state.warm = warm.offer(setup, setup.warm)
    briefing = knowledge.brief(setup, config.kb) if config.kb else None
    base = None
    try:
        base = validate(setup, state)
        if config.diagnostic_proton_intra_kernel:
            traces = diagnose(setup, setup.baseline_source, "baseline", "baseline_diagnostic")
            merge_diagnostics(base, traces)
        loop = _Loop(setup, state, base, briefing)
        loop.record_baseline()
        adopted = None
        warm_start = state.warm
        if config.warm_start == "on" and warm_start is not None:
            adopted = warm.adopt(
                setup,
                warm_start,
                lambda exp_id: warm_start.provider.propose(loop.context(exp_id)),
                loop.judge_offered,
                setup.budget.candidates_per_round,
            )
            state.warm_slots_spent = warm.evaluations(warm_start)
            if adopted is not None:
                state.best = adopted
        loop.start_trace(state.adopted["record"] if adopted and state.adopted else None)
        return _finish(loop, loop.rounds())
    except BundleChanged as exc:
        setup.say(f"[gitkb] run stopped: {exc.message}")
        stopping = "kernel_changed" if isinstance(exc, KernelTouched) else "bundle_changed"
        document = outputs.write(setup, state, outputs.Ending(stopping, error=exc.message), base)
        return RunResult(document, EXIT_STOPPED)


def _commit_run_winner(
    setup: RunSetup,
    plan: commit.CommitPlan,
    winner: BestSoFar,
    base_score: Score,
    final_score: Score,
    reverify: Callable[[bytes], tuple[bool, str]],
) -> dict:
    """Commit a run's revalidated winner (as ``plan`` found its target) with its message;
    write ``auto_commit.json``."""
    if setup.trace.head is None:  # the trailers cite the trace: it starts before any round
        raise GitkbError("the run's trace has no commit for the winner to cite")
    subject, message = commit.winner_message(
        setup.config.commit_message, winner.experiment, setup.kernel.name, base_score,
        final_score, setup.trace_label, setup.trace.head,
    )  # fmt: skip
    result = commit.commit_winner(plan, winner.source.encode("utf-8"), message, reverify)
    document = result.as_json()
    (setup.output / "auto_commit.json").write_bytes(dumps(document))
    if result.success:
        state = (
            f"committed {result.commit_revision} into {result.repo_root} ({result.vcs}): {subject}"
        )
    else:
        state = f"commit failed: {result.diagnostics}"
    setup.say(f"[gitkb] winner {winner.id} {state}")
    setup.say(result.event_line())
    return document
