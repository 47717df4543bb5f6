"""The optimization loop: baseline, rounds of candidates, promotion, revalidation, commit.

``run(config)`` is the whole of ``git kb optimize`` as a library call: it writes
the output folder (result.json, experiments/, trace/, bundle/, ...), prints the
reviewer's log through ``config.progress`` and returns the final document with
its exit code: 0 a winner, 2 no winner, 3 a winner whose commit failed, 1 a run
stopped because the frozen bundle changed. Setup errors (a bad bundle, a missing
agent, a bundle that fails validation) raise GitkbError (exit 1).
"""

from __future__ import annotations

from dataclasses import dataclass

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
from gitkb.optimize.providers import Candidate, ProposalContext
from gitkb.optimize.revalidate import revalidate
from gitkb.optimize.setup import CommitRefused, Run, RunConfig, hardware_tokens, prepare
from gitkb.optimize.trace import memory_record
from gitkb.optimize.validation import validate

__all__ = ["RunConfig", "RunResult", "run", "result_json"]

EXCLUSIONS_KEPT = 5
# The final pick: the best and up to this many runners-up are measured again back to back.
RUNOFF_CONTENDERS = 2
RUNOFF_PASSES = 2  # the second pass in reverse order, so neither side always runs first
# A runner-up first measured below this share of the best is not re-measured: one sample
# under load can be off by a third, not by more.
RUNOFF_BAND = 0.6
EXIT_OK, EXIT_STOPPED, EXIT_NO_WINNER, EXIT_COMMIT_FAILED = 0, 1, 2, 3
result_json = outputs.result_json


@dataclass
class RunResult:
    document: dict
    exit_code: int


class _Loop:
    """The rounds of one run: the current best, what was seen and rejected, the trace's
    version counter."""

    def __init__(self, run: Run, base: Measurement) -> None:
        self.run = run
        self.base = base
        self.seen = {scoring.source_key(run.baseline_source)}
        self.exclusions: list[dict] = []
        self.version = 0
        self.best: dict = {}
        self.spent = 0  # candidate slots the warm start used (they count against the budget)
        # every correct measurement (warm-start offers too): (aggregate, experiment id, candidate)
        self.measured: list[tuple[float, str, Candidate]] = []

    # ------------------------------------------------------------------ the baseline

    def record_baseline(self) -> None:
        """The kernel as the run found it, measured: the first best."""
        run, base = self.run, self.base
        base.score.aggregate = 1.0
        experiment = record(run, "baseline", 0, None, "baseline", None, base, [], 0)
        self.best = {
            "id": "baseline",
            "source": run.baseline_source,
            "score": base.score,
            "aggregate": 1.0,
            "version": 0,
            "experiment": experiment,
            "profiles": base.profiles,
        }

    def start_trace(self, adopted: str | None) -> None:
        """The trace's v0: the code the run's own work starts from. After a warm start that
        is the adopted record's code (``adopted``: its id), so mining files only what the
        run changed on top of it, measured against it; the adoption itself is the record's
        attestation and confirmation, never a technique of this run."""
        run, best = self.run, self.best
        start = best["experiment"]
        if adopted is not None:
            start = dict(start, status="baseline", category="baseline", change="", hypothesis="")
        run.trace.baseline(
            best["source"],
            memory_record(
                0,
                start,
                best["score"],
                best["score"],
                None,
                experiments.profiler_evidence(run, best["profiles"]),
                reference=best["aggregate"],
            ),
            operator=run.operator,
            description=(run.bundle.target.get("optimization_guidance") or "")[:500],
            hardware=hardware_tokens(run.bundle.target),
            label=run.trace_label,
            adopted=adopted,
            reference=best["aggregate"],
        )
        self.best = dict(best, version=0)

    # ------------------------------------------------------------------ rounds

    def context(self, exp_id: str) -> ProposalContext:
        run, best = self.run, self.best
        return ProposalContext(
            experiment_id=exp_id,
            best_source=best["source"],
            baseline_source=run.baseline_source,
            best_id=best["id"],
            target=run.bundle.target,
            cases=[dict(c.raw) for c in run.bundle.cases],
            best_cases=[c.as_json() for c in best["score"].cases],
            best_profile=best["profiles"],
            exclusions=self.exclusions[-EXCLUSIONS_KEPT:],
            seen=frozenset(self.seen),
            workspace=run.output / "workspaces" / exp_id,
            references=run.references,
            knowledge=run.knowledge.records if run.knowledge is not None else [],
            kb_context=run.kb_context,
        )

    def rounds(self) -> str:
        """Rounds x candidates per round, best-first; returns the stopping reason."""
        budget = self.run.budget
        skip = self.spent
        for round_no in range(1, budget.max_rounds + 1):
            promoted = False
            for index in range(budget.candidates_per_round):  # TLX counts from c000
                if skip:  # this slot went to a warm-start candidate
                    skip -= 1
                    continue
                if self.run.elapsed() > budget.max_total_seconds:
                    return "time_budget_exhausted"
                exp_id = f"r{round_no:03d}-c{index:03d}"
                self.run.say(stage_line(exp_id, "generating"))
                candidate = self.run.provider.propose(self.context(exp_id))
                if candidate is None:
                    return "no_candidates"
                outcome = self.judge(candidate, exp_id, round_no)
                if outcome["status"] == "promoted":
                    self.best, promoted = outcome["best"], True
                else:
                    self.exclusions.append(exclusion(outcome["experiment"]))
            if not promoted and round_no < budget.max_rounds:
                self.profile_best_deeper(round_no)
        return "round_budget_exhausted"

    def profile_best_deeper(self, round_no: int) -> None:
        """After a dry round: a deep profile of the current best, for the next proposals."""
        run = self.run
        if not (run.config.profile and run.bundle.has_profile):
            return
        if run.elapsed() > run.budget.max_total_seconds:
            return
        exp_id = f"r{round_no:03d}-deep"
        found = measure(
            run, self.best["source"], exp_id, "deep",
            "a round without a promotion: deeper evidence for the next proposals", self.base.score,
        )  # fmt: skip
        if found.measured and found.profiles:
            self.best = dict(self.best, profiles=found.profiles)
        run.say(f"[gitkb] {exp_id} deep profile of {self.best['id']} after a dry round")

    # ------------------------------------------------------------------ one candidate

    def judge(self, candidate, exp_id: str, round_no: int, traced: bool = True) -> dict:
        """Check, evaluate and decide one candidate; record it; commit it to the trace
        (``traced``; a warm-start candidate is not: its verdict is an attestation)."""
        run, best, base = self.run, self.best, self.base.score
        parent = best["id"]
        announce(run, exp_id, candidate)
        if candidate.source is None:
            why = [candidate.error or "the provider produced no candidate"]
            exp = record(run, exp_id, round_no, parent, "failed", candidate, None, why, None)
            decide_line(run, exp, best["aggregate"])
            return {"status": "failed", "experiment": exp}
        refusal = scoring.precheck(candidate.source, best["source"], self.seen)
        if refusal:  # never evaluated: TLX's "failed", as for a candidate that raised
            why = [f"pre-evaluation: {refusal}"]
            exp = record(run, exp_id, round_no, parent, "failed", candidate, None, why, None)
            decide_line(run, exp, best["aggregate"])
            return {"status": "failed", "experiment": exp}
        self.seen.add(scoring.source_key(candidate.source))
        run.say(stage_line(exp_id, "evaluating"))
        self.version += traced
        version = self.version if traced else None
        measurement, verdict = self.measure_and_decide(candidate, exp_id, best["aggregate"])
        status, diagnostics = "failed", measurement.diagnostics
        if verdict is not None:
            status = "promoted" if verdict.promoted else "rejected"
            diagnostics = verdict.reasons + measurement.diagnostics
        exp = record(
            run, exp_id, round_no, parent, status, candidate, measurement, diagnostics, version
        )
        decide_line(run, exp, best["aggregate"])
        score = measurement.score
        if score is not None and score.aggregate is not None and score.protected_pass:
            self.measured.append((score.aggregate, exp_id, candidate))
        if traced:
            evidence = experiments.profiler_evidence(run, measurement.profiles)
            memory = memory_record(
                version, exp, score, base, best["aggregate"], evidence, run.trace.reference
            )
            # the trace names the knowledge-base records the proposal drew on, or ruled out
            memory["kb_cited"], memory["kb_excluded_by"] = exp["kb_cited"], exp["kb_excluded_by"]
            if status != "promoted":
                sha = experiments.trace_rejection(run, exp, measurement, version, memory)
            else:
                sha = run.trace.promoted(
                    version,
                    candidate.source,
                    memory,
                    candidate.commit_title or candidate.change or exp_id,
                    (score.aggregate / best["aggregate"] - 1) * 100,
                )
            self.feedback(candidate, exp, status, sha)
        if status != "promoted":
            return {"status": status, "experiment": exp}
        new_best = {
            "id": exp_id,
            "source": candidate.source,
            "score": score,
            "aggregate": score.aggregate,
            "version": version,
            "experiment": exp,
            "profiles": measurement.profiles,
        }
        return {"status": status, "experiment": exp, "best": new_best}

    def feedback(self, candidate, experiment: dict, status: str, trace_commit: str) -> None:
        """A measured version's outcome as feedback on the records it cited (--kb)."""
        given = knowledge.give_feedback(self.run, candidate, status, trace_commit)
        if given:
            experiment["kb_feedback"] = given
            outputs_path = self.run.output / "experiments" / experiment["id"] / "result.json"
            outputs_path.write_bytes(
                experiments.dumps(outputs.experiment_json(self.run.output, experiment))
            )
            self.run.say(
                f"[gitkb] {experiment['id']} feedback {given.get('outcome')} on "
                f"{', '.join(given.get('records', [])) or given.get('error', '-')}"
            )

    def measure_and_decide(self, candidate, exp_id: str, best_aggregate: float):
        """Measure (deep for a scheduling hypothesis), decide, and re-measure with a deep
        profile when the candidate sits near the threshold or its benchmark and profile
        disagree; returns (measurement, verdict or None when nothing was measured)."""
        run, base = self.run, self.base.score
        budget = run.budget
        level, reason = "summary", "candidate"
        if profiling.scheduling(candidate.hypothesis, candidate.change):
            level, reason = "deep", "a scheduling hypothesis needs stall and occupancy evidence"
        measurement = measure(run, candidate.source, exp_id, level, reason, base)
        if not measurement.measured:
            return measurement, None
        verdict = scoring.decide(
            measurement.score, base, best_aggregate, budget.min_speedup, budget.max_cv
        )
        again = "near-threshold rerun" if verdict.rerun else None
        if again is None and level != "deep":
            disagree = profiling.disagreement(measurement.score, base)
            if disagree and profiling.worth_a_deeper_look(measurement.score, budget.min_speedup):
                again = f"benchmark and profile disagree ({disagree[0]})"
        if again is None:
            return measurement, verdict
        if verdict.rerun:  # TLX's line for the same step
            line = stage_line(exp_id, "near-threshold-profiling")
            run.say(f"{line} diagnostics=reason=near_threshold")
        run.say(f"[gitkb] {exp_id} measured again with a deep profile: {again}")
        measurement = measure(run, candidate.source, f"{exp_id}-rerun", "deep", again, base)
        if not measurement.measured:
            return measurement, None
        return measurement, scoring.decide(
            measurement.score,
            base,
            best_aggregate,
            budget.min_speedup,
            budget.max_cv,
            allow_rerun=False,
        )

    def judge_offered(self, offered, exp_id: str) -> dict:
        """A warm-start candidate, judged like a round candidate (round 0), kept out of the
        trace: what it did goes to the record's ledger."""
        outcome = self.judge(offered, exp_id, 0, traced=False)
        if outcome["status"] != "promoted":
            self.exclusions.append(exclusion(outcome["experiment"]))
        return outcome

    # ------------------------------------------------------------------ the end

    def runoff(self) -> dict | None:
        """The final pick: the best and its closest runners-up (correct, each measured once
        before, a warm-start offer or a round candidate alike) measured again in
        ``RUNOFF_PASSES`` back-to-back passes (the second in reverse order), each scored on
        its pooled samples, so that one unlucky sample under load does not leave the optimum
        behind a worse setting. A runner-up whose pooled score passes the promotion rules
        against the best's becomes the best (a new version of the trace). Returns the report
        (None: no runner-up to re-measure, or no time left)."""
        run, best, base = self.run, self.best, self.base.score
        contenders, keys = [], {scoring.source_key(best["source"])}
        for aggregate, exp_id, candidate in sorted(self.measured, key=lambda m: -m[0]):
            key = scoring.source_key(candidate.source)
            if key in keys or aggregate < best["aggregate"] * RUNOFF_BAND:
                continue
            keys.add(key)
            contenders.append((aggregate, exp_id, candidate))
        contenders = contenders[:RUNOFF_CONTENDERS]
        if not contenders or run.elapsed() > run.budget.max_total_seconds:
            return None
        why = "the final pick: measured again beside the runners-up, on equal terms"
        sources = [(best["id"], best["source"])] + [(e, c.source) for _, e, c in contenders]
        passes: list[list[Measurement]] = [[] for _ in sources]
        for number in range(RUNOFF_PASSES):
            order = range(len(sources)) if number % 2 == 0 else reversed(range(len(sources)))
            for index in order:
                exp_id, source = sources[index]
                folder = f"runoff-{exp_id}" + (f"-{number + 1}" if number else "")
                passes[index].append(measure(run, source, folder, "summary", why, base))
        pooled = [self.pooled(found) for found in passes]
        fresh = pooled[0].score.aggregate if pooled[0] is not None else None
        if pooled[0] is not None and not pooled[0].score.protected_pass:
            fresh = None
        report = {"best": best["id"], "best_again": fresh, "contenders": [], "picked": None}
        picked = None
        for (aggregate, exp_id, candidate), found in zip(contenders, pooled[1:], strict=True):
            verdict = None
            if found is not None:
                verdict = scoring.decide(
                    found.score, base, fresh or 0.0, run.budget.min_speedup, run.budget.max_cv,
                    allow_rerun=False,
                )  # fmt: skip
            won = verdict is not None and verdict.promoted
            report["contenders"].append(
                {"experiment": exp_id, "first": aggregate, "won": won,
                 "again": found.score.aggregate if found is not None else None}
            )  # fmt: skip
            if won and (picked is None or found.score.aggregate > picked[1].score.aggregate):
                picked = (exp_id, found, candidate)
        run.say(
            f"[gitkb] runoff: {best['id']} again {experiments.fmt(fresh, 4)}x; "
            + ", ".join(f"{c['experiment']} {experiments.fmt(c['again'], 4)}x"
                        for c in report["contenders"])
        )  # fmt: skip
        if picked is not None:
            report["picked"] = self.promote_runoff(*picked, fresh or 0.0)
        return report

    def pooled(self, found: list[Measurement]) -> Measurement | None:
        """One measurement over a source's runoff passes (None unless every pass measured)."""
        if not all(m.measured for m in found):
            return None
        last = found[-1]
        score = scoring.pooled([m.score for m in found], self.run.bundle.cases, self.base.score)
        return Measurement(score, last.diagnostics, last.metrics, last.profiles, last.level)

    def promote_runoff(
        self, exp_id: str, found: Measurement, candidate: Candidate, incumbent: float
    ) -> str:
        """The runner-up the runoff picked, committed to the trace as a new version over the
        best (its gain against the best's fresh measurement); returns its experiment id."""
        run, best, base = self.run, self.best, self.base.score
        new_id = f"runoff-{exp_id}"
        self.version += 1
        diagnostics = [
            f"runoff: {found.score.aggregate:.4f}x against {best['id']}'s {incumbent:.4f}x, "
            f"{RUNOFF_PASSES} passes back to back, samples pooled (first measured {exp_id})"
        ]
        round_no = run.budget.max_rounds + 1
        exp = record(run, new_id, round_no, best["id"], "promoted", candidate, found,
                     diagnostics, self.version)  # fmt: skip
        decide_line(run, exp, incumbent)
        evidence = experiments.profiler_evidence(run, found.profiles)
        memory = memory_record(
            self.version, exp, found.score, base, incumbent, evidence, run.trace.reference
        )
        memory["kb_cited"], memory["kb_excluded_by"] = exp["kb_cited"], exp["kb_excluded_by"]
        pct = (found.score.aggregate / incumbent - 1) * 100 if incumbent else 0.0
        title = candidate.commit_title or candidate.change or exp_id
        sha = run.trace.promoted(self.version, candidate.source, memory, title, pct)
        self.feedback(candidate, exp, "promoted", sha)
        self.best = {
            "id": new_id,
            "source": candidate.source,
            "score": found.score,
            "aggregate": found.score.aggregate,
            "version": self.version,
            "experiment": exp,
            "profiles": found.profiles,
        }
        return new_id

    def reverify(self, merged: bytes) -> tuple[bool, str]:
        """The merged file of a dirty target, through the harness: protected cases must pass."""
        found = measure(
            self.run, merged.decode("utf-8", "replace"), "commit-reverify", "summary",
            "the target was dirty: re-validate the merged file", self.base.score,
        )  # fmt: skip
        if not found.measured:
            return False, "; ".join(found.diagnostics)
        cases = [c.as_json() for c in found.score.cases]  # TLX keeps this one at the root
        (self.run.output / "commit_revalidation.json").write_bytes(
            experiments.dumps(outputs.performance(cases, found.score.aggregate))
        )
        if not found.score.protected_pass:
            return False, f"protected cases failed: {', '.join(found.score.failed_protected())}"
        return True, ""


def _finish(run: Run, loop: _Loop, stopping: str) -> RunResult:
    """Revalidate the finalist, commit it, write back; write the outputs."""
    winner, final, revalidation = None, None, None
    runoff = loop.runoff()
    if loop.best["id"] != "baseline":
        final, revalidation = revalidate(run, loop.best, loop.base)
        if revalidation["passed"]:
            winner = loop.best
            if run.config.diagnostic_proton_intra_kernel:
                traces = diagnose(run, winner["source"], "final", "final_winner_diagnostic")
                merge_diagnostics(final, traces)
        else:
            stopping = "finalist_revalidation_failed"
            if run.warm_report is not None:
                warm.recheck_failed(run, revalidation)
    final_cases = (final if winner else loop.base).score.cases
    run.say(
        progress_line(
            {
                "id": "final",
                "status": "revalidated" if winner else "baseline",
                "aggregate_speedup": final.score.aggregate if winner else 1.0,
                "cases": [c.as_json() for c in final_cases],
            }
        )
    )
    commit_result = None
    if winner is not None and run.plan is not None:
        run.frozen.verify("before the winner commit")
        commit_result = commit.commit_run_winner(
            run, winner, loop.base.score, final.score, loop.reverify
        )
    ending = outputs.Ending(stopping, winner, final, commit_result, revalidation)
    write_back = None
    if run.kb is not None:
        write_back = (
            writeback.write_back(run) if winner else {"attempted": False, "reason": "no winner"}
        )
    elif run.config.kb:  # a warm start that found the store unreadable ran cold
        write_back = {"attempted": False, "reason": "the knowledge base could not be read"}
    document = outputs.write(run, ending, loop.base)
    if run.warm_report is not None:
        document.update(warm.speedups(run, winner, document["final"]["aggregate_speedup"]))
        document["warm_start"] = run.warm_report
    if runoff is not None:
        document["runoff"] = runoff
    if write_back is not None:
        document["write_back"] = write_back
    if run.knowledge is not None:
        document["knowledge"] = dict(
            run.knowledge.report(),
            context_documents=run.kb_context_files,
            context_bytes=len(run.kb_context.encode("utf-8")),
        )
    outputs.save(run.output, document)
    if winner is None:
        why = "; ".join(revalidation["reasons"]) if revalidation else stopping
        run.say(f"[gitkb] no winner: {why[:300]}")
        return RunResult(document, EXIT_NO_WINNER)
    if commit_result is not None and not commit_result["success"]:
        return RunResult(document, EXIT_COMMIT_FAILED)
    return RunResult(document, EXIT_OK)


def tlx_context(run: Run) -> None:
    """The store's knowledge as TLX's agent context: the documents ``git kb export
    tlx-knowledge`` writes, selected for this target by TLX's rule (the kernel's family
    beside the wider ones), joined widest first, headed by file, within 16 KiB."""
    from gitkb.importers import tlx_knowledge

    target = run.bundle.target
    found = tlx_knowledge.topics(tlx_knowledge.store_records(run.kb))
    run.kb_context, run.kb_context_files = tlx_knowledge.context(
        found, target.get("backend"), target.get("architecture"), run.operator
    )
    run.say(
        f"[gitkb] knowledge context: {', '.join(run.kb_context_files) or 'none'} "
        f"({len(run.kb_context.encode('utf-8'))} bytes)"
    )


def run(config: RunConfig) -> RunResult:
    """Run one optimization; see the module docstring."""
    try:
        state = prepare(config)
    except CommitRefused as refused:  # TLX: a failed auto_commit on stdout, exit 3, no run
        config.progress(refused.result.event_line())
        return RunResult(refused.result.as_json(), EXIT_COMMIT_FAILED)
    if state.warm is not None:
        warm.offer(state)
    if config.kb:
        state.knowledge = knowledge.gather(
            config.kb, hardware_tokens(state.bundle.target)[0], state.operator,
            state.baseline_source,
        )  # fmt: skip
        state.say(
            f"[gitkb] knowledge base: {len(state.knowledge.records)} records in the kernel's "
            f"scope ({', '.join(state.knowledge.ids) or 'none'})"
        )
        if state.kb is not None:
            tlx_context(state)
    base = None
    try:
        base = validate(state)
        if config.diagnostic_proton_intra_kernel:
            traces = diagnose(state, state.baseline_source, "baseline", "baseline_diagnostic")
            merge_diagnostics(base, traces)
        loop = _Loop(state, base)
        loop.record_baseline()
        adopted = None
        if config.warm_start == "on":
            slots = state.budget.candidates_per_round
            adopted = warm.adopt(
                state,
                lambda exp_id: state.warm.propose(loop.context(exp_id)),
                loop.judge_offered,
                slots,
            )
            loop.spent = warm.evaluations(state)
            if adopted is not None:
                loop.best = adopted["best"]
        loop.start_trace(state.warm_report["adopted"]["record"] if adopted else None)
        return _finish(state, loop, loop.rounds())
    except BundleChanged as exc:
        state.say(f"[gitkb] run stopped: {exc.message}")
        stopping = "kernel_changed" if isinstance(exc, KernelTouched) else "bundle_changed"
        document = outputs.write(state, outputs.Ending(stopping, error=exc.message), base)
        return RunResult(document, EXIT_STOPPED)
