"""The built-in distiller: one packet in, at most one record out (docs/trace-format.md §7).

It copies; it never composes facts. Every number it writes is a number of the packet,
every snippet line is a line of the packet's code, every mechanism is the trace's own
sentence. What the packet cannot support is left out and named in the result's
``missing`` list; an anti-strategy without a checkable condition and a cause of at least
forty characters is not written at all.
"""

from __future__ import annotations

import re

from gitkb.gates.established_fact import NON_MECHANISM
from gitkb.mine.distill.distilled import Distilled
from gitkb.record import new_track
from gitkb.record.worth import rank
from gitkb.trace import facts
from gitkb.trace.packets import AUTHORITATIVE_BASIS, GEOMEAN_BASIS, Packet

DIFF_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"
SOURCE_FORMAT = "source (verbatim)"
SNIPPET_LINES = 40
MIN_MECHANISM = 40

_API = re.compile(r"unsupported|not supported|cannot express|does not exist|no api", re.I)
_ACCURACY = re.compile(r"accuracy|tolerance|\bnan\b|mismatch|incorrect|precision", re.I)
_CEILING = re.compile(r"does not fit|exceeds|limit|capacity|ceiling|saturat", re.I)
GENERIC_LESSON = (
    "Under the stated condition this change made the kernel worse; do not repeat it "
    "without removing the cause."
)
# Every fixed phrase this distiller writes into a record, so the trace's label can be kept
# out of them (docs/trace-format.md, rule 15): a label inside one would be echoed by every record.
PHRASES = (
    DIFF_FORMAT,
    SOURCE_FORMAT,
    GENERIC_LESSON,
    "optimizing a kernel on",
    "considering this change for a kernel on",
    "Lower the latency of the kernel on",
    "Know which change not to repeat on the kernel",
    "Start a kernel for from",
    "the snapshot of a milestone of this trace, a step that cut the latency by at least a fifth",
    "the best measured version of this trace",
    "the previous best version of this kernel",
    "the trace's final kernel",
    "the trace's correctness check",
    "the trace's correctness check passed",
    "no correctness verdict in the trace",
    "the store already holds this operator from another trace or harness",
    "geomean against the trace's baseline",
    "over shapes:",
    "harness",
    "ncu",
    "latency lower-better %",
    AUTHORITATIVE_BASIS,
    GEOMEAN_BASIS,
)
# Categories whose expected impact is the supervisor's or the seed's bookkeeping, not the
# agent's account of why the change works.
SUPERVISOR_CATEGORIES = (
    "baseline",
    "framework_baseline",
    "long_horizon_episode",
    "fast_long_horizon_episode",
)


def _diff_snippet(diff: str) -> str:
    lines = [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return "\n".join(lines[:SNIPPET_LINES]) + "\n" if lines else ""


def _edit_scope(diff: str) -> str:
    changed = sum(
        1 for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )
    if changed <= 2:
        return "one-line"
    return "kernel-rewrite" if changed > 20 else "epilogue" if changed <= 4 else "kernel-rewrite"


def _base(packet: Packet, record_type: str) -> dict:
    target, af = packet.target, packet.agent_facing
    scope = dict(target["scope"])
    operator = af["operator"]
    name = operator["name"]
    scope["operators"] = [name]
    regime: dict = {"var_axes": list(operator.get("variable_axes") or [])}
    n_shapes = operator.get("n_benchmarked_shapes") or af["measurements"]["n_measured_shapes"]
    if n_shapes:
        regime["n_shapes"] = n_shapes
    technique = target["id"].rsplit(".", 1)[-1].rsplit("-", 1)[0]
    return {
        "schema": "clean-1.3",
        "id": target["id"],
        "type": record_type,
        "level": target["level"],
        "status": "active",
        "episode_key": target["episode_key"],
        "retrieval": {
            "scope": scope,
            "generality": {
                "arch": scope["arch"],
                "language": scope["dsl"],
                "workload_family": target["workload_family"],
            },
            "signals": {"bottleneck": None, "metrics": {}, "shape_regime": regime, "symptoms": []},
            "technique_tags": [technique, name],
            "triggers": [f"optimizing a {scope['dsl']} {name} kernel on {operator['gpu']}"],
        },
    }


def _summary(packet: Packet, confidence: str, profiler_note: bool) -> dict:
    af = packet.agent_facing
    usable = af["profiler"]["ncu_measured_the_kernel_under_test"]
    evidence = {
        "basis": "profiler" if usable else ("bench-only" if confidence == "measured" else "none"),
        "tool": "ncu" if usable else None,
    }
    if usable and profiler_note and af["profiler"]["conclusion"]:
        evidence["note"] = af["profiler"]["conclusion"]
    return {
        "confidence": confidence,
        "bottleneck_evidence": evidence,
        "measured_on": {"gpu": af["operator"]["gpu"], "harness": af["operator"]["harness"]},
    }


def _raw(packet: Packet, effect: dict | None) -> dict:
    prov = packet.provenance
    raw = {
        "source_repo": prov["source_repo"],
        "version": prov["version"],
        "git_commit": prov["git_commit"],
    }
    if effect:
        raw["effect"] = effect
    if packet.evidence_extra:
        raw["evidence_extra"] = packet.evidence_extra
    return raw


def bench_cases(measurements: dict) -> list[str]:
    """The workload cases a version was measured over (its per-shape latencies' names),
    from which the bench key is derived: only like-for-like numbers claim comparability.
    Bare indices (``0``, ``1``: a legacy trace's opaque shape ids) name no workload."""
    names = sorted({s["shape"] for s in measurements.get("per_shape_latency") or []})
    return [] if all(n.isdigit() for n in names) else names


def _measured_evidence(packet: Packet, pct: float | None, against_parent: bool) -> dict:
    """A measured record's evidence: the summary, and the raw effect in absolute geomeans
    (a strategy's against the best earlier version; it alone notes the profiler)."""
    m = packet.agent_facing["measurements"]
    effect = {"basis": "measured", "new_geomean_us": m["geomean_us"]}
    if against_parent:
        effect["parent_geomean_us"] = m["best_so_far_geomean_us"]
    effect |= {
        "baseline_geomean_us": m["baseline_geomean_us"],
        "delta_pct": pct,
        "comparable": bool(m["comparable_with_the_store"]),
    }
    cases = bench_cases(m)
    if cases:
        effect["bench_cases"] = cases
    return {
        "summary": _summary(packet, "measured", profiler_note=against_parent),
        "raw": _raw(packet, effect),
    }


def _problem(packet: Packet) -> dict:
    op = packet.agent_facing["operator"]
    problem = {
        "target": op["gpu"],
        "statement": op["what_it_computes"] or f"the {op['name']} kernel of this trace",
        "operator": op["name"],
        "dsl": op["dsl"],
    }
    if op.get("fixed_axes"):
        problem["shape_contract"] = dict(op["fixed_axes"])
    return problem


def _measured_gain(packet: Packet, pct: float, against: str) -> dict:
    af = packet.agent_facing
    m = af["measurements"]
    n = m["n_measured_shapes"]
    metric = {
        "metric": "latency",
        "direction": "lower-better",
        "delta_pct": pct,
        "before": None,
        "after": None,
        "unit": "%",
        "measured_over": f"over {n} shapes: {against}" if n else against,
        "source": "harness",
    }
    gain = {
        "basis": "measured",
        "kind": "performance",
        "primary": "latency",
        "pct": pct,
        "metrics": [metric],
        "regressions": [],
        "comparable": bool(m["comparable_with_the_store"]),
    }
    correctness = m["correctness"]
    if correctness.get("status"):
        gain["correctness"] = {
            "gate": "the trace's correctness check",
            "observed": correctness["status"],
            "max_diff": correctness.get("max_abs_err"),
        }
    if not m["comparable_with_the_store"]:
        gain["note"] = "the store already holds this operator from another trace or harness"
    return gain


def distill(packet: Packet) -> Distilled:
    """The built-in distiller."""
    kind = {
        "strategy": _strategy,
        "anti-strategy": _anti,
        "reference-kernel": _reference,
    }[packet.record_type]
    result = kind(packet)
    if result.record is not None:
        result.record["worth"]["rank"] = rank(result.record)
    return result


def _stated(text: str) -> bool:
    return len(text.strip()) >= MIN_MECHANISM and facts.states_mechanism(text)


def _experiment_sentences(af: dict, keys: tuple[str, ...]) -> list[str]:
    """The journal experiments' own sentences under ``keys``, in journal order."""
    return [
        e[k].strip()
        for e in af.get("journal_experiments", [])
        for k in keys
        if isinstance(e.get(k), str) and e[k].strip()
    ]


def _mechanism(af: dict) -> tuple[str, str]:
    """(the strategy's mechanism, why none): a journal experiment's conclusion, result or
    hypothesis that states a cause; the agent's expected impact (not the supervisor's
    bookkeeping); the profiler's finding on a usable capture."""
    said, profiler = af["what_the_run_said"], af["profiler"]
    for sentence in _experiment_sentences(af, ("conclusion", "result", "hypothesis")):
        if _stated(sentence):
            return sentence, ""
    if said["expected_impact"] and said["category_hint"] not in SUPERVISOR_CATEGORIES:
        return said["expected_impact"], ""
    if profiler["ncu_measured_the_kernel_under_test"] and profiler["conclusion"]:
        return profiler["conclusion"], ""
    for sentence in _experiment_sentences(af, ("expected_effect", "hypothesis")):
        return sentence, ""
    return "", "the trace states no expected impact, hypothesis or usable profiler finding"


def _bottleneck(af: dict) -> tuple[str | None, str]:
    """(the bottleneck in the trace's words, why none): a usable capture's finding, else
    what a profiler stated in the version's memory."""
    profiler = af["profiler"]
    if profiler["ncu_measured_the_kernel_under_test"] and profiler["conclusion"]:
        return profiler["conclusion"], ""
    finding = profiler.get("stated_finding") or {}
    if finding.get("summary") or finding.get("bottleneck_type"):
        return finding.get("summary") or finding["bottleneck_type"], ""
    return None, "no usable profiler capture and no profiler finding stated in memory"


def _applies_when(texts: list[str], dsl: str) -> list[str]:
    """The conditions the trace's own sentences state (arch, shape regime, dtype, a
    versioned toolchain), each a fragment of those sentences."""
    found: list[str] = []
    for text in texts:
        for value in facts.conditions(text).values():
            if value not in found:
                found.append(value)
    return found


def _strategy(packet: Packet) -> Distilled:
    af, missing = packet.agent_facing, []
    said, m = af["what_the_run_said"], af["measurements"]
    pct = m["improve_pct_vs_best_so_far"]
    if pct is None or m["geomean_us"] is None:
        return Distilled(packet.seg_id, None, skipped="no measured gain in the packet")
    change = said["change"] or said["commit_subject"]
    if not change:
        return Distilled(packet.seg_id, None, skipped="the trace says nothing about the change")
    mechanism, why = _mechanism(af)
    if not mechanism:
        missing.append(f"payload.mechanism ({why})")
    snippet = _diff_snippet(packet.diff or "")
    implementation = {"format": DIFF_FORMAT, "snippet": snippet} if snippet else {"format": "none"}
    if not snippet:
        missing.append("payload.implementation.snippet (no kernel diff at this version)")
    builds_on = af.get("builds_on") or {}
    approach = builds_on.get("previous_approach") or "the previous best version of this kernel"
    if not builds_on.get("previous_approach"):
        missing.append("payload.trace.builds_on.approach (the previous step says nothing)")
    record = _base(packet, "strategy")
    op = af["operator"]
    problem = _problem(packet)
    bottleneck, why_not = _bottleneck(af)
    if bottleneck:
        problem["bottleneck"] = bottleneck
        record["retrieval"]["signals"]["symptoms"] = [bottleneck]
    else:
        missing += [
            f"payload.problem.bottleneck ({why_not})",
            f"retrieval.signals.symptoms ({why_not})",
        ]
    record["payload"] = {
        "goal": f"Lower the latency of the {op['name']} kernel ({op['dsl']}) on {op['gpu']}.",
        "problem": problem,
        "trace": {
            "builds_on": {
                "approach": approach,
                "is_baseline": bool(builds_on.get("was_the_untouched_baseline")),
            }
        },
        "change": change,
        "mechanism": mechanism,
        "implementation": implementation,
        "cost": {
            "edit_scope": _edit_scope(packet.diff or ""),
            "risk": "low" if m["correctness"].get("status") == "PASS" else "med",
            "risk_basis": "the trace's correctness check passed"
            if m["correctness"].get("status") == "PASS"
            else "no correctness verdict in the trace",
        },
        "next_steps": [d["direction"] for d in af["open_directions"] if d.get("direction")],
    }
    if not record["payload"]["next_steps"]:
        missing.append("payload.next_steps (no open directions recorded)")
    conditions = _applies_when(
        [change, mechanism, said["expected_impact"], *_experiment_sentences(af, ("hypothesis",))],
        op["dsl"],
    )
    if conditions:
        record["payload"]["applies_when"] = conditions
    else:
        missing.append("payload.applies_when (the trace states no arch, shape, dtype or toolchain)")
    record["evidence"] = _measured_evidence(packet, pct, against_parent=True)
    record["worth"] = {
        "rank": {"score": 0.0, "tier": "provisional"},
        "gain": _measured_gain(
            packet, pct, m.get("improvement_basis") or "the best earlier version"
        ),
        "track": new_track({"step_gain_pct": pct}),
    }
    return Distilled(packet.seg_id, record, missing)


def _verdict(text: str) -> str:
    if _API.search(text):
        return "api-limitation"
    if _ACCURACY.search(text):
        return "accuracy-gate/ceiling"
    if _CEILING.search(text):
        return "performance-ceiling"
    return "not-worth-it-here"


def _anti(packet: Packet) -> Distilled:
    af = packet.agent_facing
    lever = af["the_failed_lever"]
    fix = af["how_it_was_fixed"]
    cause = af.get("stated_cause") or ""
    # The trace's own sentence of the cause when it states one apart, else all it says.
    mechanism = (
        cause.strip() if _stated(cause) and not NON_MECHANISM.search(cause) else lever.strip()
    )
    condition = facts.conditions(lever, af["operator"]["dsl"])
    if len(mechanism) < MIN_MECHANISM or not facts.states_mechanism(mechanism):
        return Distilled(
            packet.seg_id,
            None,
            skipped="the trace's text gives no cause of 40+ characters for this lever",
        )
    if NON_MECHANISM.search(mechanism):
        return Distilled(
            packet.seg_id, None, skipped="the trace's text is bookkeeping, not a mechanism"
        )
    if not facts.checkable(lever):
        return Distilled(
            packet.seg_id,
            None,
            skipped="the trace's text names no checkable condition (arch, shape, dtype)",
        )
    missing = []
    record = _base(packet, "anti-strategy")
    op = af["operator"]
    attempted = af.get("attempted") or lever
    record["retrieval"]["triggers"] = [
        f"considering this change for a {op['dsl']} {op['name']} kernel on {op['gpu']}: {attempted}"
    ]
    lesson = fix or GENERIC_LESSON
    if not fix:
        missing.append("payload.lesson (no fix recorded; generic lesson)")
    problem = _problem(packet)
    bottleneck, why_not = _bottleneck(af)
    if bottleneck:
        problem["bottleneck"] = bottleneck
    else:
        missing.append(f"payload.problem.bottleneck ({why_not})")
    record["payload"] = {
        "goal": f"Know which change not to repeat on the {op['name']} kernel ({op['dsl']}).",
        "problem": problem,
        "attempted": attempted,
        "verdict": _verdict(lever),
        "lesson": lesson,
        "established_fact": {"condition": condition, "mechanism": mechanism},
        "root_cause": mechanism,
    }
    if fix:
        record["payload"]["would_retry_if"] = fix
    else:
        missing.append("payload.would_retry_if (no fix recorded)")
    experiment = (af.get("journal_experiments") or [{}])[0]
    observed = experiment.get("evidence") or experiment.get("result") or ""
    if packet.seg_kind == "rejected-candidate":
        observed = af["what_the_run_said"]["gate_verdict"]["failure"] or observed
    if experiment.get("hypothesis"):
        record["payload"]["hypothesis"] = experiment["hypothesis"]
    else:
        missing.append("payload.hypothesis (no journal experiment states one)")
    if observed:
        record["payload"]["observed"] = observed
        record["retrieval"]["signals"]["symptoms"] = [observed]
    else:
        why = "no journal evidence or gate failure stated"
        missing += [f"payload.observed ({why})", f"retrieval.signals.symptoms ({why})"]
    has_numbers = af["measurements"]["geomean_us"] is not None
    record["evidence"] = {
        "summary": _summary(packet, "measured" if has_numbers else "inferred", False),
        "raw": _raw(packet, None),
    }
    record["evidence"]["summary"]["bottleneck_evidence"]["basis"] = (
        "profiler" if af["profiler"]["ncu_measured_the_kernel_under_test"] else "asserted"
    )
    record["worth"] = {
        "rank": {"score": 0.0, "tier": "provisional"},
        "gain": {
            "basis": "qualitative",
            "kind": "none",
            "pct": None,
            "metrics": [],
            "regressions": [],
        },
        "track": new_track(),
    }
    return Distilled(packet.seg_id, record, missing)


def _reference(packet: Packet) -> Distilled:
    af = packet.agent_facing
    m = af["measurements"]
    snapshot = packet.seg_kind == "mega-snapshot"
    if not packet.kernel:
        what = "the milestone's snapshot" if snapshot else "the terminal version's kernel.py"
        return Distilled(packet.seg_id, None, skipped=f"{what} is missing")
    op = af["operator"]
    said = af["what_the_run_said"]
    record = _base(packet, "reference-kernel")
    start = (
        "the snapshot of a milestone of this trace, a step that cut the latency by at least a fifth"
        if snapshot
        else "the best measured version of this trace"
    )
    record["payload"] = {
        "goal": f"Start a {op['dsl']} {op['name']} kernel for {op['gpu']} from {start}.",
        "problem": _problem(packet),
        "trace": {
            "builds_on": {
                "approach": said["change"] or said["commit_subject"] or "the trace's final kernel",
                "is_baseline": False,
            }
        },
        "implementation": {"format": SOURCE_FORMAT, "snippet": packet.kernel},
    }
    pct = m["improve_pct_vs_baseline"]
    missing = []
    if pct is not None and pct > 0:
        gain = _measured_gain(packet, pct, "geomean against the trace's baseline")
        speedup = round(m["baseline_geomean_us"] / m["geomean_us"], 2)
    else:
        gain = {"basis": "measured", "kind": "performance", "pct": None, "metrics": []}
        missing.append("worth.gain.pct (no baseline to compare with)")
        speedup = None
    record["evidence"] = _measured_evidence(packet, pct, against_parent=False)
    total = m.get("speedup_vs_original_baseline")
    if isinstance(total, (int, float)) and total > 0:
        # After a warm start the trace's baseline is adopted code: the speedup against the
        # kernel as the run found it is what ranks this code for the next run (%g: stated
        # as the packet states it).
        record["retrieval"]["signals"]["metrics"]["speedup_x"] = float(f"{total:.6g}")
    record["worth"] = {
        "rank": {"score": 0.0, "tier": "provisional"},
        "gain": gain,
        "track": new_track({"best_speedup_x": speedup}),
    }
    return Distilled(packet.seg_id, record, missing)
