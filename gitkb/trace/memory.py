"""One version of a trace, and what its ``memory/v<N>.json`` says (docs/trace-format.md §2, rules 2,
4 and 7): bad input degrades the version (no numbers) with the reason kept, never raises."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitkb.record.values import finite_number, mapping, stripped_text
from gitkb.trace.files import JsonProblem, parse_json

if TYPE_CHECKING:  # journals.py reads VersionRow
    from gitkb.trace.journals import Journal


@dataclass
class VersionRow:
    version: str
    n: int
    sha: str | None = None  # the segment's commit: the code commit, else the memory event
    code_sha: str | None = None  # the commit that supplies kernel.py and the diff
    parent: str | None = None  # code_sha's first parent
    event_sha: str | None = None  # first commit adding memory/v<N>.json (rule 1)
    subject: str = ""
    body: str = ""
    has_commit: bool = False
    has_memory: bool = False
    memory_path: str | None = None
    reverted: bool = False
    deadend_items: list[str] = field(default_factory=list)
    deadend_blob: str = ""
    deadend_streak: int | None = None
    next_direction: str = ""
    dsl: str = "any"
    # numbers (None when the memory is missing or degraded)
    geomean: float | None = None
    arith_mean: float | None = None
    by_shape: list[tuple[str, float]] = field(default_factory=list)
    speedup_vs_ref: float | None = None
    speedup_vs_original: float | None = None  # an optimize run's, against the kernel as found
    correctness: str | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    gate: str | None = None
    gate_failure: str = ""
    measurement_status: str | None = None
    measurement_subject: str | None = None
    measurement_source: str | None = None
    carried_from: str | None = None
    improvement_pct: float | None = None
    category: str = ""
    description: str = ""
    expected_impact: str = ""
    open_directions: list[dict] = field(default_factory=list)
    pitfalls: list[dict] = field(default_factory=list)
    experiments: list[dict] = field(default_factory=list)
    profiler_finding: dict = field(default_factory=dict)  # profile_evidence a profiler stated
    long_horizon_status: str | None = None
    episode: int | None = None  # the long-horizon episode, promoted or not
    promotion: bool = False  # an ``episode <E>: promote ...`` commit recorded this version
    journal_path: str | None = None  # memory/long_horizon_e<EEEE>.json of a promotion
    journal: Journal | None = None  # its long-horizon journal, or a committed one
    experiments_from: str | None = None  # the file the experiments' ids refer to
    cited_commit_kind: str | None = None  # promotion / revalidation (long-horizon) or None
    kernel_blob: str | None = None  # kernel.py at the code commit (a regular file)
    parent_kernel_blob: str | None = None  # kernel.py at its parent, for the diff
    git_commit_hash: str | None = None
    masked: bool = False
    problems: list[str] = field(default_factory=list)  # per-version degradations (rule 7)

    @property
    def carry_forward(self) -> bool:
        """Numbers that describe the incumbent, not this version's code (rule 2)."""
        return (
            (self.measurement_subject not in (None, "candidate"))
            or self.measurement_source == "canonical_incumbent_carry_forward"
            or bool(self.carried_from)
            or self.gate == "FAIL"
        )

    @property
    def text(self) -> str:
        """The version's own words: subject, body, description and gate failure."""
        parts = [self.subject, self.body, self.description, self.gate_failure]
        return "\n".join(p for p in parts if p)


def normalize_pitfall(entry: object) -> dict | None:
    """Both dialects (rule 4) -> {pitfall, explanation, fix}; strings kept, nulls dropped."""
    if isinstance(entry, str):
        return {"pitfall": entry.strip(), "explanation": "", "fix": ""} if entry.strip() else None
    if not isinstance(entry, dict):
        return None
    if any(k in entry for k in ("pitfall", "explanation", "fix")):
        out = {k: stripped_text(entry.get(k)) for k in ("pitfall", "explanation", "fix")}
    else:
        out = {
            "pitfall": stripped_text(entry.get("error_message")),
            "explanation": stripped_text(entry.get("root_cause")),
            "fix": stripped_text(entry.get("fix_applied")) or stripped_text(entry.get("lesson")),
        }
    return out if any(out.values()) else None


def read_memory(row: VersionRow, raw: bytes | None, refused: str | None) -> None:
    """Fill ``row`` from the bytes of its memory file (None: unreadable, ``refused`` says why)."""
    if raw is None:
        row.problems.append(refused or "memory file unreadable")
        return
    try:
        doc = parse_json(raw)
    except JsonProblem as problem:
        row.problems.append(f"memory is {problem}; no numbers")
        return
    if not isinstance(doc, dict):
        row.problems.append(f"memory is a JSON {type(doc).__name__}, not an object; no numbers")
        return
    row.masked = doc.get("masked") is True
    for key in ("performance", "correctness", "quality_gate", "long_horizon", "experience"):
        if key in doc and doc[key] is not None and not isinstance(doc[key], dict):
            row.problems.append(f"{key} is a {type(doc[key]).__name__}, not an object; ignored")
    _performance(row, doc)
    correctness = mapping(doc.get("correctness"))
    row.correctness = stripped_text(correctness.get("status")) or None
    row.max_abs_err = finite_number(correctness.get("max_abs_err"))
    row.max_rel_err = finite_number(correctness.get("max_rel_err"))
    gate = mapping(doc.get("quality_gate"))
    row.gate = stripped_text(gate.get("result")) or None
    row.gate_failure = stripped_text(gate.get("failure_reason"))[:2000]
    _words(row, doc)
    experiments = mapping(doc.get("experience")).get("experiments")
    for position, entry in enumerate(experiments if isinstance(experiments, list) else [], 1):
        if isinstance(entry, dict):
            row.experiments.append({**_details(entry.get("details")), **entry, "index": position})
    row.profiler_finding = profiler_finding(doc.get("profile_evidence"))
    if row.experiments:
        row.experiments_from = row.memory_path
    row.long_horizon_status = stripped_text(mapping(doc.get("long_horizon")).get("status")) or None
    commit_hash = doc.get("git_commit_hash")
    if isinstance(commit_hash, (str, int)) and not isinstance(commit_hash, bool):
        row.git_commit_hash = str(commit_hash)


# profile_evidence values that say no profiler looked (the supervisor's own bookkeeping).
_NOT_PROFILED = re.compile(
    r"^(?:|none\b.*|n/?a|unknown|episode-derived|not_profiled\w*|episode journal)$",
    re.IGNORECASE,
)


def profiler_finding(value: object) -> dict:
    """``profile_evidence`` when a profiler stated a finding: the tool and what it found,
    verbatim; {} for the supervisor's placeholders (``episode-derived``, fast mode)."""
    evidence = mapping(value)
    tool = stripped_text(evidence.get("tool_used"))
    found = {
        "tool": tool,
        "bottleneck_type": stripped_text(evidence.get("bottleneck_type")),
        "summary": stripped_text(evidence.get("evidence_summary")),
    }
    if _NOT_PROFILED.match(tool) or _NOT_PROFILED.match(found["bottleneck_type"]):
        return {}
    return {k: v for k, v in found.items() if v}


def _details(value: object) -> dict:
    """The producer folds an experiment's extra keys (``conclusion``, ``expected_effect``)
    into one JSON ``details`` string; its text values are the experiment's own."""
    if not isinstance(value, str) or not value.startswith("{"):
        return {}
    try:
        details = mapping(parse_json(value.encode("utf-8")))
    except JsonProblem:
        return {}
    return {k: v.strip() for k, v in details.items() if isinstance(v, str) and v.strip()}


def _performance(row: VersionRow, doc: dict) -> None:
    perf = mapping(doc.get("performance"))
    geo = finite_number(perf.get("latency_us_geomean"))
    row.geomean = geo if geo and geo > 0 else None
    if geo is None and perf.get("latency_us") is not None:
        row.problems.append("only latency_us present: no usable geomean")
    arith = finite_number(perf.get("latency_us_arith_mean"))
    row.arith_mean = arith if arith and arith > 0 else None
    shapes = perf.get("latency_us_by_shape")
    if shapes is not None and not isinstance(shapes, dict):
        row.problems.append("latency_us_by_shape is not an object; ignored")
    dropped = 0
    for key, value in mapping(shapes).items():
        latency = finite_number(value)
        if latency is None or latency <= 0:
            dropped += 1
            continue
        row.by_shape.append((str(key), latency))
    if dropped:
        row.problems.append(f"{dropped} per-shape latencies are not positive numbers; dropped")
    row.speedup_vs_ref = finite_number(perf.get("speedup_vs_ref_geomean"))
    row.speedup_vs_original = finite_number(perf.get("speedup_vs_original_baseline"))
    row.measurement_status = stripped_text(perf.get("measurement_status")) or None
    row.measurement_subject = stripped_text(perf.get("measurement_subject")) or None
    row.measurement_source = stripped_text(perf.get("measurement_source")) or None
    row.carried_from = stripped_text(perf.get("carried_from_version")) or None
    row.improvement_pct = finite_number(perf.get("authoritative_improvement_pct"))


def _words(row: VersionRow, doc: dict) -> None:
    optimization = doc.get("optimization")
    if isinstance(optimization, str):
        row.description = optimization.strip()
    else:
        optimization = mapping(optimization)
        row.category = stripped_text(optimization.get("action_category"))
        row.description = stripped_text(optimization.get("action_description"))
        row.expected_impact = stripped_text(optimization.get("expected_impact"))
    directions = doc.get("open_directions")
    for entry in directions if isinstance(directions, list) else []:
        if isinstance(entry, dict) and stripped_text(entry.get("direction")):
            row.open_directions.append(
                {
                    "direction": stripped_text(entry["direction"]),
                    "rationale": stripped_text(entry.get("rationale")),
                }
            )
    pitfalls = doc.get("pitfalls_and_fixes")
    for entry in pitfalls if isinstance(pitfalls, list) else []:
        row.pitfalls.append(normalize_pitfall(entry))
