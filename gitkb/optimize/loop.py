"""The optimization loop: baseline, rounds of candidates, promotion, revalidation, commit.

``run(config)`` is the whole of ``git kb optimize`` as a library call: it writes
the output folder (result.json, experiments/, trace/, ...), prints progress
lines through ``config.progress`` and returns the final document with its exit
code (0 winner, 2 no winner, 3 winner whose commit failed). Setup errors raise
GitkbError (exit 1) before anything runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gitkb.errors import GitkbError, writing
from gitkb.optimize import bundle as bundle_mod
from gitkb.optimize import providers, scoring, worker
from gitkb.optimize.providers import warmstart
from gitkb.optimize.trace import TraceWriter, dumps, memory_record

EXCLUSIONS_KEPT = 5
EXIT_OK, EXIT_NO_WINNER, EXIT_COMMIT_FAILED = 0, 2, 3


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class RunConfig:
    bundle: Path
    output: Path
    kernel: Path | None = None  # None: the bundle's own kernel.py, never committed
    provider: str = "knobs"
    provider_options: providers.ProviderOptions = field(default_factory=providers.ProviderOptions)
    budget_flags: dict = field(default_factory=dict)  # flags the user gave explicitly
    commit_winner: bool = True
    vcs: str = "auto"
    commit_message: str | None = None
    warm_start: str = "off"  # on | reference | off (WARM_START.md, "The adopting run")
    kb: str | None = None  # the knowledge base: warm start reads it, write-back mines into it
    progress: Callable[[str], None] = _stderr


@dataclass
class RunResult:
    document: dict
    exit_code: int


def profiler_mapping(backend: str) -> dict:
    """``targets/<backend>/profiler.toml``: which native profiler the backend uses."""
    from gitkb.resources import data_dir

    path = data_dir("targets") / backend / "profiler.toml"
    if not path.is_file():
        return {"tool": "none", "reason": f"no profiler mapping for backend {backend!r}"}
    return tomllib.loads(path.read_text(encoding="utf-8")).get("native_profiler", {})


def hardware_tokens(target: dict) -> list[str]:
    """The target's hardware as trace tokens: the first of device, architecture, backend
    that the token table knows; else the raw device text (mining will say it is unknown)."""
    from gitkb import targets

    for key in ("device", "architecture", "backend"):
        text = target.get(key)
        found = targets.lookup(text) if isinstance(text, str) else None
        if found is not None:
            return [found.token]
    raw = target.get("device") or target.get("architecture") or target["backend"]
    return [raw]


def _fmt(value, digits: int = 3) -> str:
    return "nan" if value is None else f"{value:.{digits}f}"


def progress_line(experiment: dict) -> str:
    parts = [
        f"[gitkb] {experiment['id']} status={experiment['status']}",
        f"aggregate_speedup={_fmt(experiment.get('aggregate_speedup'), 4)}",
    ]
    for case in experiment.get("cases", []):
        parts.append(
            f"case={case['case_id']},{'correct' if case['correct'] else 'incorrect'},"
            f"median={_fmt(case['median_us'])},p95={_fmt(case['p95_us'])},"
            f"cv={_fmt(case['cv'])},speedup={_fmt(case['speedup'], 4)}"
        )
    if experiment["status"] in ("rejected", "failed") and experiment.get("diagnostics"):
        parts.append(f"reason={experiment['diagnostics'][0][:160]!r}")
    return " ".join(parts)


class _Run:
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.bundle = bundle_mod.load(config.bundle)
        kernel = config.kernel or self.bundle.kernel
        if kernel is None:
            raise GitkbError(
                f"no kernel: pass --kernel FILE (the bundle has no kernel.py) ({self.bundle.path})"
            )
        self.kernel = Path(kernel)
        try:
            self.baseline_source = self.kernel.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise GitkbError(f"kernel file unreadable: {exc} ({self.kernel})") from None
        self.budget = (
            bundle_mod.Budget().merged(config.budget_flags).merged(self.bundle.budget_overrides)
        )
        self.warm = None  # the warm-start provider, when --warm-start is on or reference
        self.warm_report: dict | None = None
        self.kb = None  # the store write-back mines into
        if config.warm_start not in warmstart.MODES:
            raise GitkbError(f"--warm-start must be one of {', '.join(warmstart.MODES)}", 2)
        if config.provider == "warm-start":
            raise GitkbError(
                "warm-start is not a round provider: use --warm-start on --kb STORE (--provider)"
            )
        if config.warm_start != "off":
            self.warm = providers.load(
                "warm-start",
                dataclasses.replace(config.provider_options, kb=config.kb),
                self.bundle.tunables,
            )
            self.kb = self.warm.store
        elif config.kb:
            self.kb = warmstart.open_kb(config.kb)
        self.plan = None
        self.commit_skipped = None
        if config.commit_winner:
            if config.kernel is None:
                self.commit_skipped = (
                    "the kernel is the bundle's own kernel.py (the bundle is never written); "
                    "pass --kernel FILE to commit the winner into that file's repository"
                )
            else:
                from gitkb.optimize import commit

                self.plan = commit.prepare(self.kernel, config.vcs)
        self.provider = providers.load(
            config.provider, config.provider_options, self.bundle.tunables
        )
        self.output = Path(config.output)
        if self.output.exists() and any(self.output.iterdir()):
            raise GitkbError(f"output folder is not empty ({self.output})")
        with writing(self.output):
            self.output.mkdir(parents=True, exist_ok=True)
        self.profiler = profiler_mapping(self.bundle.backend)
        self.started = time.monotonic()
        self.experiments: list[dict] = []
        self.trace = TraceWriter(self.output / "trace")
        self.trace_label = trace_label(self.bundle.name, self.baseline_source)
        self.operator = self.bundle.target.get("operator") or self.bundle.name
        self.references = None
        self.adopted_source: str | None = None
        if self.warm is not None:
            self._offer()

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, source: str, exp_id: str, level: str, reason: str):
        """Run the harness once on ``source``; returns (experiment folder, Evaluation)."""
        folder = self.output / "experiments" / exp_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kernel.py").write_text(source, encoding="utf-8")
        profile_request = {
            "level": level,
            "tools": ["native_profiler"],
            "experiment_id": exp_id,
            "artifacts_dir": str((folder / "profile_artifacts").resolve()),
            "reason": reason,
            "diagnostic_only": False,
            "native_profiler": self.profiler,
        }
        evaluation = worker.run_harness(
            self.bundle.harness,
            source,
            self.bundle.target,
            [dict(c.raw) for c in self.bundle.cases],
            self.budget.benchmark_repetitions,
            folder,
            self.budget.max_candidate_seconds,
            self.bundle.environment,
            profile_request,
        )
        profiles = {
            c["case_id"]: c["profile"]
            for c in (evaluation.response or {}).get("cases", [])
            if "profile" in c
        }
        (folder / "profile.json").write_bytes(dumps(profiles))
        return folder, evaluation

    def measure(self, source, exp_id, level, reason, baseline):
        """Evaluate and score; returns (Score or None, diagnostics, metrics, profiles)."""
        _, evaluation = self.evaluate(source, exp_id, level, reason)
        if evaluation.error:
            return None, [evaluation.error], {}, {}
        response = evaluation.response
        if not response["build"]["success"]:
            return None, ["build failed: " + "; ".join(response["build"]["diagnostics"])], {}, {}
        score = scoring.score(response, self.bundle.cases, baseline)
        diagnostics = [
            f"{c.case_id}: {d}" for c in score.cases for d in c.diagnostics if not c.passed
        ]
        metrics = {c["case_id"]: c.get("metrics") for c in response["cases"]}
        profiles = {c["case_id"]: c.get("profile") for c in response["cases"] if "profile" in c}
        return score, diagnostics, metrics, profiles

    # ------------------------------------------------------------------ recording

    def _experiment(
        self, exp_id, round_no, parent, status, candidate, score, diagnostics, metrics, version
    ):
        meta = candidate.metadata() if candidate else {}
        experiment = {
            "id": exp_id,
            "round": round_no,
            "parent": parent,
            "status": status,
            "version": version,
            "category": f"{candidate.provider or self.config.provider}_provider"
            if candidate
            else "baseline",
            **meta,
            "diagnostics": diagnostics,
            "metrics": metrics,
            "aggregate_speedup": score.aggregate if score else None,
            "cases": [c.as_json() for c in score.cases] if score else [],
        }
        experiment["numbers"] = self._numbers(score)
        self.experiments.append(experiment)
        folder = self.output / "experiments" / exp_id
        folder.mkdir(parents=True, exist_ok=True)
        if candidate is not None and candidate.source is not None:
            (folder / "kernel.py").write_text(candidate.source, encoding="utf-8")
        (folder / "result.json").write_bytes(dumps(experiment))
        self.config.progress(progress_line(experiment))
        return experiment

    @staticmethod
    def _numbers(score) -> str:
        if score is None:
            return "not measured"
        cases = ", ".join(
            f"{c.case_id} {_fmt(c.median_us)} us ({_fmt(c.speedup, 3)}x)"
            if c.passed
            else f"{c.case_id} failed"
            for c in score.cases
        )
        return f"aggregate {_fmt(score.aggregate, 4)}x; {cases}"

    def _profiler_evidence(self, profiles: dict) -> dict:
        tool = self.profiler.get("tool", "none")
        if tool == "none":
            summary = self.profiler.get("reason", "no native profiler on this backend")
        else:
            usable = [k for k, v in profiles.items() if isinstance(v, dict) and "error" not in v]
            summary = f"{tool} profile of {len(usable)} of {len(profiles)} cases"
        return {
            "tool": tool,
            "summary": summary,
            "bottleneck_type": "not_profiled" if tool == "none" else "profiled",
        }

    # ------------------------------------------------------------------ the run

    def run(self) -> RunResult:
        budget = self.budget
        base_score, diagnostics, metrics, base_profiles = self.measure(
            self.baseline_source, "baseline", "deep", "baseline", None
        )
        if base_score is None or not base_score.protected_pass:
            failed = base_score.failed_protected() if base_score else []
            # One line: each diagnostic's first line; the harness's traceback stays on file.
            why = "; ".join(d.strip().splitlines()[0] for d in diagnostics if d.strip())
            why = why or f"protected cases failed: {', '.join(failed)}"
            self._write_outputs(None, None, "baseline_failed", None, None, base_profiles, {})
            details = self.output / "experiments" / "baseline"  # response.json, harness.log
            raise GitkbError(
                f"the baseline does not pass its protected cases: {why[:500]} (details: {details})"
            )
        base_score.aggregate = 1.0
        baseline_exp = self._experiment(
            "baseline", 0, None, "baseline", None, base_score, [], metrics, 0
        )
        self.trace.baseline(
            self.baseline_source,
            memory_record(
                0,
                baseline_exp,
                base_score,
                base_score,
                None,
                self._profiler_evidence(base_profiles),
            ),
            operator=self.operator,
            description=(self.bundle.target.get("optimization_guidance") or "")[:500],
            hardware=hardware_tokens(self.bundle.target),
            label=self.trace_label,
        )
        best = {
            "id": "baseline",
            "source": self.baseline_source,
            "score": base_score,
            "aggregate": 1.0,
            "version": 0,
            "experiment": baseline_exp,
            "profiles": base_profiles,
        }
        seen = {scoring.source_key(self.baseline_source)}
        exclusions: list[dict] = []
        version = 0
        stopping = "round_budget_exhausted"
        if self.config.warm_start == "on":
            best, version = self._warm_start(best, base_score, seen, version, exclusions)
        for round_no in range(1, budget.max_rounds + 1):
            for index in range(1, budget.candidates_per_round + 1):
                if time.monotonic() - self.started > budget.max_total_seconds:
                    stopping = "time_budget_exhausted"
                    break
                exp_id = f"r{round_no:03d}-c{index:03d}"
                candidate = self.provider.propose(self._context(exp_id, best, exclusions))
                if candidate is None:
                    stopping = "no_candidates"
                    break
                outcome = self._try(candidate, exp_id, round_no, best, base_score, seen, version)
                if outcome["version"]:
                    version = outcome["version"]
                if outcome["status"] == "promoted":
                    best = outcome["best"]
                else:
                    exclusions.append(exclusion(outcome["experiment"]))
            else:
                continue
            break

        final_score, final_profiles = base_score, base_profiles
        winner = None
        if best["id"] != "baseline":
            score, diagnostics, _, profiles = self.measure(
                best["source"], "final", "deep", "finalist revalidation", base_score
            )
            if score is not None and score.protected_pass and (score.aggregate or 0) > 1.0:
                final_score, final_profiles, winner = score, profiles, best
            else:
                why = "; ".join(diagnostics) or (
                    f"aggregate {_fmt(score.aggregate if score else None, 4)}x no longer above 1"
                )
                stopping = "finalist_revalidation_failed"
                failed = dict(
                    best["experiment"],
                    status="rejected",
                    diagnostics=[f"finalist revalidation failed: {why}"],
                )
                self.trace.revalidation_failed(
                    best["version"],
                    self.baseline_source,
                    memory_record(
                        best["version"],
                        failed,
                        score,
                        base_score,
                        None,
                        self._profiler_evidence(profiles),
                    ),
                )
                self.config.progress(
                    f"[gitkb] final status=revalidation_failed reason={why[:160]!r}"
                )
        commit_result = None
        if winner is not None and self.plan is not None:
            commit_result = self._commit(winner, base_score, final_score)
        write_back = None
        if self.kb is not None:
            write_back = (
                self._write_back()
                if winner is not None
                else {"attempted": False, "reason": "no winner"}
            )
        document = self._write_outputs(
            winner, final_score, stopping, commit_result, base_score, base_profiles, final_profiles
        )
        if self.warm_report is not None:
            document.update(self._speedups(winner, document["aggregate_speedup"]))
            document["warm_start"] = self.warm_report
        if write_back is not None:
            document["write_back"] = write_back
        (self.output / "result.json").write_bytes(dumps(document))
        if winner is None:
            return RunResult(document, EXIT_NO_WINNER)
        if commit_result is not None and not commit_result["success"]:
            return RunResult(document, EXIT_COMMIT_FAILED)
        return RunResult(document, EXIT_OK)

    def _try(self, candidate, exp_id, round_no, best, base_score, seen, version) -> dict:
        """Check, evaluate and judge one candidate; record it; commit it to the trace."""
        parent = best["id"]
        if candidate.source is None:
            why = [candidate.error or "the provider produced no candidate"]
            exp = self._experiment(
                exp_id, round_no, parent, "failed", candidate, None, why, {}, None
            )
            return {"status": "failed", "experiment": exp, "version": None}
        refusal = scoring.precheck(candidate.source, best["source"], seen)
        if refusal:
            exp = self._experiment(
                exp_id,
                round_no,
                parent,
                "rejected",
                candidate,
                None,
                [f"pre-evaluation: {refusal}"],
                {},
                None,
            )
            return {"status": "rejected", "experiment": exp, "version": None}
        seen.add(scoring.source_key(candidate.source))
        version += 1
        score, diagnostics, metrics, profiles = self.measure(
            candidate.source, exp_id, "summary", "candidate", base_score
        )
        status = "failed"
        if score is not None:
            verdict = scoring.decide(
                score, base_score, best["aggregate"], self.budget.min_speedup, self.budget.max_cv
            )
            if verdict.rerun:
                score, diagnostics, metrics, profiles = self.measure(
                    candidate.source,
                    f"{exp_id}-rerun",
                    "deep",
                    "near-threshold rerun",
                    base_score,
                )
                verdict = (
                    scoring.decide(
                        score,
                        base_score,
                        best["aggregate"],
                        self.budget.min_speedup,
                        self.budget.max_cv,
                        allow_rerun=False,
                    )
                    if score is not None
                    else None
                )
            if verdict is not None:
                status = "promoted" if verdict.promoted else "rejected"
                diagnostics = verdict.reasons + diagnostics
        exp = self._experiment(
            exp_id, round_no, parent, status, candidate, score, diagnostics, metrics, version
        )
        evidence = self._profiler_evidence(profiles)
        if status == "promoted":
            memory = memory_record(version, exp, score, base_score, best["aggregate"], evidence)
            pct = (score.aggregate / best["aggregate"] - 1) * 100
            self.trace.promoted(
                version,
                candidate.source,
                memory,
                candidate.commit_title or candidate.change or exp_id,
                pct,
            )
            new_best = {
                "id": exp_id,
                "source": candidate.source,
                "score": score,
                "aggregate": score.aggregate,
                "version": version,
                "experiment": exp,
                "profiles": profiles,
            }
            return {"status": status, "experiment": exp, "version": version, "best": new_best}
        memory = memory_record(version, exp, score, base_score, best["aggregate"], evidence)
        reason = (exp["diagnostics"] or [status])[0]
        self.trace.rejected(version, memory, reason, candidate.change or exp_id)
        return {"status": status, "experiment": exp, "version": version}

    def _commit(self, winner, base_score, final_score) -> dict:
        from gitkb.optimize import commit

        exp = winner["experiment"]
        subject = (
            self.config.commit_message
            or exp.get("commit_title")
            or f"Optimize {self.kernel.name} with gitkb"
        )
        summary = exp.get("commit_summary") or exp.get("change") or ""
        message = commit.build_message(
            subject,
            summary,
            [c.as_json() for c in base_score.cases],
            [c.as_json() for c in final_score.cases],
            final_score.aggregate,
            self.trace_label,
            self.trace.head,
        )

        def reverify(merged: bytes) -> tuple[bool, str]:
            score, diagnostics, _, _ = self.measure(
                merged.decode("utf-8", "replace"),
                "commit-reverify",
                "summary",
                "the target was dirty: re-validate the merged file",
                base_score,
            )
            if score is None:
                return False, "; ".join(diagnostics)
            if not score.protected_pass:
                return False, f"protected cases failed: {', '.join(score.failed_protected())}"
            return True, ""

        result = commit.commit_winner(
            self.plan, winner["source"].encode("utf-8"), message, reverify
        )
        document = result.as_json()
        (self.output / "auto_commit.json").write_bytes(dumps(document))
        state = (
            "committed " + (result.commit or "")[:12]
            if result.success
            else (f"commit failed: {result.diagnostic}")
        )
        self.config.progress(f"[gitkb] winner {winner['id']} {state}")
        return document

    # ------------------------------------------------------------------ knowledge base

    def _context(self, exp_id: str, best: dict, exclusions: list[dict]):
        return providers.ProposalContext(
            experiment_id=exp_id,
            best_source=best["source"],
            baseline_source=self.baseline_source,
            best_id=best["id"],
            target=self.bundle.target,
            cases=[dict(c.raw) for c in self.bundle.cases],
            best_cases=[c.as_json() for c in best["score"].cases],
            best_profile=best["profiles"],
            exclusions=exclusions[-EXCLUSIONS_KEPT:],
            workspace=self.output / "workspaces" / exp_id,
            references=self.references,
        )

    def _offer(self) -> None:
        """Resolve the kernel against the store before anything runs: a bad store or
        hardware is a setup error, and the audit folder exists before any verdict."""
        folder = self.output / "warm_start"
        answer = self.warm.offer(
            self.operator, hardware_tokens(self.bundle.target)[0], self.baseline_source, folder
        )
        self.references = folder / "kb_references"
        self.warm_report = {
            "mode": self.config.warm_start,
            "store": str(self.config.kb),
            "store_commit": answer["commit"],
            "read_reason": answer["read_reason"],
            "kernel": answer["kernel"],
            "offered": [
                {k: r[k] for k in ("rank", "id", "type", "speedup", "comparable", "applies")}
                for r in answer["ranks"]
            ],
            "references": str(self.references),
            "candidates": [],
            "adopted": None,
        }
        self.config.progress(
            f"[gitkb] warm start mode={self.config.warm_start} "
            f"read_reason={answer['read_reason']} offered={len(answer['ranks'])}"
        )

    def _warm_start(self, best, base_score, seen, version, exclusions):
        """Judge the offered ranks in order through the round candidates' gate; adopt the
        first that is correct and faster; attest every one judged. Returns (best, version)."""
        index = 0
        judged: dict[str, tuple[str, str]] = {}  # source key -> (outcome, experiment)
        while True:
            index += 1
            exp_id = f"ws-{index:02d}"
            offered = self.warm.propose(self._context(exp_id, best, exclusions))
            if offered is None:
                return best, version
            key = scoring.source_key(offered.source) if offered.source is not None else None
            outcome = self._try(offered, exp_id, 0, best, base_score, seen, version)
            version = outcome["version"] or version
            experiment = outcome["experiment"]
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
            evidence = {"trace": self.trace_label, "experiment": same_as or exp_id}
            if experiment["aggregate_speedup"] is not None:
                evidence["aggregate_speedup"] = f"{experiment['aggregate_speedup']:.4f}"
            if experiment["diagnostics"] and verdict != "validated" and same_as is None:
                evidence["reason"] = " ".join(experiment["diagnostics"][0].split())[:200]
            try:
                entry["attest_commit"] = self.warm.attest(offered, verdict, evidence)
            except GitkbError as exc:  # the run's verdict stands; the ledger says why not
                entry["attest_error"] = exc.message
            self.warm_report["candidates"].append(entry)
            self.config.progress(
                f"[gitkb] warm start {exp_id} record={offered.record_id} outcome={verdict}"
            )
            if outcome["status"] == "promoted":
                self.adopted_source = offered.source
                self.warm_report["adopted"] = {
                    "experiment": exp_id,
                    "record": offered.record_id,
                    "aggregate_speedup": experiment["aggregate_speedup"],
                }
                return outcome["best"], version
            exclusions.append(exclusion(experiment))

    def _speedups(self, winner, aggregate) -> dict:
        """total_speedup: the final kernel vs the untouched baseline; incremental_speedup:
        vs the adopted warm start (the baseline when nothing was adopted), so a gain that
        came from the store is never reported as the run's own work."""
        total = aggregate if aggregate is not None else 1.0
        adopted = self.warm_report["adopted"]
        if adopted is None:
            incremental = total
        elif winner is not None and winner["source"] == self.adopted_source:
            incremental = 1.0  # the final kernel is the adopted start
        else:
            incremental = total / adopted["aggregate_speedup"]
        return {"total_speedup": total, "incremental_speedup": incremental}

    def _write_back(self) -> dict:
        """Mine the run's own trace into the knowledge base under the run's label."""
        from gitkb.mine.pipeline import mine

        try:
            result = mine(self.output / "trace", store=self.kb, label=self.trace_label)
        except GitkbError as exc:  # the win and its commit stand; say why nothing was kept
            self.config.progress(f"[gitkb] write-back failed: {exc.message[:200]}")
            return {"attempted": True, "success": False, "error": exc.message}
        summary = result.summary()
        kept = [
            {"action": o.action, "record": o.record_id, "commit": o.commit}
            for o in result.outcomes
            if o.action in ("insert", "confirm", "conflict")
        ]
        self.config.progress(
            f"[gitkb] write-back into {self.kb.location}: "
            + (", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items())) or "nothing")
        )
        return {
            "attempted": True,
            "success": True,
            "store": str(self.kb.location),
            "label": result.label,
            "counts": summary["counts"],
            "records": kept,
        }

    def _write_outputs(
        self,
        winner,
        final_score,
        stopping,
        commit_result,
        base_score,
        base_profiles,
        final_profiles,
    ) -> dict:
        out = self.output
        best_source = winner["source"] if winner else self.baseline_source
        (out / "best_kernel.py").write_text(best_source, encoding="utf-8")
        (out / "experiments.json").write_bytes(dumps(self.experiments))
        (out / "baseline_profile.json").write_bytes(dumps(base_profiles or {}))
        (out / "best_profile.json").write_bytes(dumps(final_profiles or base_profiles or {}))
        aggregate = final_score.aggregate if winner and final_score else 1.0
        document = {
            "success": winner is not None and (commit_result is None or commit_result["success"]),
            "stopping_reason": stopping,
            "winner": winner["id"] if winner else None,
            "aggregate_speedup": aggregate
            if aggregate is None or math.isfinite(aggregate)
            else None,
            "provider": self.config.provider,
            "bundle": str(self.bundle.path),
            "kernel": str(self.kernel),
            "output": str(out),
            "budget": dict(self.budget.__dict__),
            "baseline": {"cases": [c.as_json() for c in base_score.cases] if base_score else []},
            "final": {"cases": [c.as_json() for c in final_score.cases] if final_score else []},
            "experiments": [
                {
                    k: e.get(k)
                    for k in (
                        "id",
                        "round",
                        "parent",
                        "status",
                        "version",
                        "hypothesis",
                        "change",
                        "diagnostics",
                        "numbers",
                        "aggregate_speedup",
                    )
                }
                for e in self.experiments
            ],
            "commit": commit_result
            if commit_result is not None
            else {
                "attempted": False,
                "reason": self.commit_skipped
                or ("--no-commit-winner" if not self.config.commit_winner else "no winner"),
            },
            "trace": {
                "path": str(out / "trace"),
                "label": self.trace_label if self.trace.head else None,
                "head": self.trace.head,
            },
            "seconds": round(time.monotonic() - self.started, 3),
        }
        (out / "result.json").write_bytes(dumps(document))
        return document


def exclusion(experiment: dict) -> dict:
    """A rejected experiment as the next prompts see it."""
    return {
        "id": experiment["id"],
        "hypothesis": experiment.get("hypothesis", ""),
        "change": experiment.get("change", ""),
        "decision": f"{experiment['status']}: {'; '.join(experiment['diagnostics'])[:300]}",
        "numbers": experiment["numbers"],
    }


def trace_label(bundle_name: str, baseline_source: str) -> str:
    """The run's trace label: written into the trace (``solution.json``), named in the winner
    commit's ``KB-Trace`` trailer, and the label mining files the trace under. Unique per
    run: a digest of the bundle, the baseline and the run's start time."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", bundle_name).strip(".-") or "bundle"
    digest = hashlib.sha256(
        f"{bundle_name}\0{time.time_ns()}\0{baseline_source}".encode()
    ).hexdigest()
    return f"gitkb-optimize-{name}-{digest[:12]}"


def run(config: RunConfig) -> RunResult:
    """Run one optimization; see the module docstring."""
    return _Run(config).run()


def result_json(document: dict) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False)
