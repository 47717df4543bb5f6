"""Partition: the ladder cut into segments, one per future record, with ids and episode keys.

Segment kinds (docs/trace-format.md §6.4, with its rules): a strategy per milestone after the
baseline; an anti-strategy per failed lever of a dead-end (list items one each, prose
one per version, long-horizon rejected experiments one each when they clear the
established-fact pre-check); curated pitfalls on versions that produced no dead-end; the
terminal reference kernel. Ids are allocated per marker above the store's existing ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from gitkb.trace import facts
from gitkb.trace.facts import fact_precheck
from gitkb.trace.ingest import Ingest
from gitkb.trace.ladder import Ladder
from gitkb.trace.memory import VersionRow
from gitkb.trace.naming import slugify
from gitkb.trace.scrub import Scrubber

MIN_ITEM_CHARS = 12
REJECTED_DECISIONS = ("revert", "reject_and_continue", "pivot")
# Where a journal experiment states why it came out as it did, most explicit first.
CAUSE_FIELDS = ("conclusion", "result", "evidence")

_VERDICT_BOILERPLATE = re.compile(
    r"^\s*v\d+\s*:\s*|\b(?:committed|reverted|dead-end recorded)\b.*$|\([+-]?\d[^)]*\)",
    re.IGNORECASE,
)
_SUFFIX = re.compile(r"-([a-z])(\d+)$")


@dataclass
class Segment:
    seg_id: str
    record_type: str  # strategy, anti-strategy, reference-kernel
    seg_kind: str
    marker: str  # s, t, r
    row: VersionRow
    technique: str
    text: str = ""  # everything the trace says of an anti-strategy's lever, in its words
    attempted: str = ""  # the lever alone: what was tried
    cause: str = ""  # the trace's own sentence of why it failed, when it states one apart
    fix: str = ""
    split_by: str = ""  # mechanical, agent, curated, journal
    fact_precheck: str = ""
    improve_pct: float | None = None
    builds_on: dict = field(default_factory=dict)
    experiments: list[int] = field(default_factory=list)
    id: str = ""
    episode_key: str = ""


def strategy_technique(row: VersionRow, scrub: Scrubber) -> str:
    description = scrub.name(row.description)
    subject = scrub.name(_VERDICT_BOILERPLATE.sub("", row.subject))
    for candidate in (description, subject):
        if len(candidate.strip()) >= MIN_ITEM_CHARS:
            return slugify(candidate)
    if row.category and row.category not in ("baseline", "exhaustive_search"):
        return slugify(scrub.name(row.category))
    return slugify(description or scrub.name(row.subject))


def partition(ingest: Ingest, ladder: Ladder, existing_ids: tuple[str, ...] = ()) -> list[Segment]:
    """The segments of the ladder, named from scrubbed text (rule 11)."""
    rows = {r.n: r for r in ingest.rows}
    scrub = ingest.scrubber

    def name(text: str) -> str:
        return slugify(scrub.name(text))

    def precheck(text: str) -> str:
        return fact_precheck(scrub.served(text))

    segments: list[Segment] = []
    previous: VersionRow | None = None
    for step in ladder.milestones:
        row = rows[step.n]
        if step.kind != "baseline":
            segments.append(
                Segment(
                    f"strategy-{row.version}",
                    "strategy",
                    f"milestone-{step.kind}",
                    "s",
                    row,
                    strategy_technique(row, scrub),
                    improve_pct=step.improve_pct,
                    builds_on={
                        "version": previous.version,
                        "is_baseline": ladder.kind(previous.n) == "baseline",
                        "geomean_us": previous.geomean,
                        "description": previous.description or previous.subject,
                    },
                    experiments=[e["index"] for e in row.experiments if not _rejected(e)],
                )
            )
        previous = row
    segments += _deadends(ingest, ladder, rows, name, precheck)
    segments += _long_horizon(ingest, ladder, name, precheck)
    if ladder.final is not None:
        row = rows[ladder.final]
        segments.append(
            Segment("refk-final", "reference-kernel", "final-kernel", "r", row, "reference-impl")
        )
    megas = [s for s in ladder.milestones if s.kind == "mega"]
    for i, step in enumerate(megas, 1):
        # A mega milestone's own snapshot is a reference kernel too (docs/trace-format.md §6.4).
        if step.n in ingest.snapshots and step.n != ladder.final:
            segments.append(
                Segment(
                    f"refk-{rows[step.n].version}",
                    "reference-kernel",
                    "mega-snapshot",
                    "r",
                    rows[step.n],
                    f"reference-impl-milestone{i}",
                )
            )
    _allocate_ids(segments, ingest, existing_ids)
    return segments


def _rejected(experiment: dict) -> bool:
    decision = str(experiment.get("decision") or "").lower()
    return decision in REJECTED_DECISIONS


def sentences(*parts: str) -> str:
    """The trace's own sentences, in order, each ending in a full stop: nothing added."""
    out = []
    for part in (p.strip() for p in parts if p):
        if part and part not in out:
            out.append(part if part[-1] in ".!?;:" else part + ".")
    return " ".join(out)


def experiment_cause(experiment: dict) -> str:
    """What an experiment says caused its result: its conclusion, result or evidence that
    states a mechanism (the first that does), else none."""
    for key in CAUSE_FIELDS:
        text = str(experiment.get(key) or "").strip()
        if text and facts.states_mechanism(text):
            return text
    return ""


def _deadends(
    ingest: Ingest,
    ladder: Ladder,
    rows: dict,
    name: Callable[[str], str],
    precheck: Callable[[str], str],
) -> list[Segment]:
    """Legacy dead-ends: a listed lever each; a prose dead-end once, or once per recorded
    pitfall when its cause sits only there (rule 13); curated pitfalls of every version
    that is not a dead-end."""
    segments: list[Segment] = []
    merged: set[int] = set()
    for step in ladder.deadends:
        row = rows[step.n]
        if _long_horizon_row(row):
            continue
        items = [i for i in row.deadend_items if len(i) >= MIN_ITEM_CHARS]
        for k, item in enumerate(items, 1):
            segments.append(
                Segment(
                    f"anti-{row.version}-{k:02d}",
                    "anti-strategy",
                    "deadend-item",
                    "t",
                    row,
                    name(item),
                    text=item,
                    attempted=item,
                    split_by="mechanical",
                    fact_precheck=precheck(item),
                )
            )
        if items:
            merged.add(row.n)  # its pitfalls restate the listed levers
            continue
        lever = _dash_text(row.subject) or row.description
        text = row.body or row.description or row.gate_failure or row.subject
        pitfalls = [(k, p) for k, p in enumerate(row.pitfalls, 1) if p and p["explanation"]]
        if not pitfalls:
            segments.append(
                Segment(
                    f"anti-{row.version}-01",
                    "anti-strategy",
                    "deadend-prose",
                    "t",
                    row,
                    name(lever or text),
                    text=text,
                    attempted=lever or text,
                    split_by="agent",
                    fact_precheck=precheck(text),
                )
            )
            continue
        # The version's one lever, its cause stated in each pitfall the agent recorded.
        merged.add(row.n)
        for position, pitfall in pitfalls:
            attempted = lever or pitfall["pitfall"] or text
            full = sentences(attempted, pitfall["pitfall"], pitfall["explanation"])
            segments.append(
                Segment(
                    f"pitfall-{row.version}-{position:02d}",
                    "anti-strategy",
                    "deadend-pitfall",
                    "t",
                    row,
                    name(pitfall["pitfall"] or attempted),
                    text=full,
                    attempted=attempted,
                    cause=pitfall["explanation"],
                    fix=pitfall["fix"],
                    split_by="curated",
                    fact_precheck=precheck(f"{full} {pitfall['fix']}"),
                )
            )
    for row in ingest.rows:
        if row.n in merged:
            continue
        for position, pitfall in enumerate(row.pitfalls, 1):
            if not pitfall:
                continue
            text = ". ".join(p for p in (pitfall["pitfall"], pitfall["explanation"]) if p)
            if len(text) < MIN_ITEM_CHARS:
                continue
            segments.append(
                Segment(
                    f"pitfall-{row.version}-{position:02d}",
                    "anti-strategy",
                    "curated-pitfall",
                    "t",
                    row,
                    name(pitfall["pitfall"] or text),
                    text=text,
                    attempted=pitfall["pitfall"] or text,
                    cause=pitfall["explanation"],
                    fix=pitfall["fix"],
                    split_by="curated",
                    fact_precheck=precheck(f"{text} {pitfall['fix']}"),
                )
            )
    return segments


def _long_horizon_row(row: VersionRow) -> bool:
    return bool(row.long_horizon_status) or row.episode is not None


def _long_horizon(
    ingest: Ingest, ladder: Ladder, name: Callable[[str], str], precheck: Callable[[str], str]
) -> list[Segment]:
    """Every stated lesson of a long-horizon run (rule 13): each rejected experiment of any
    episode, promoted or not, and a ``candidate_ready`` candidate the supervisor's A/B
    verification rejected. Blocked (infrastructure) episodes teach nothing of the kernel."""
    segments: list[Segment] = []
    for row in ingest.rows:
        if not _long_horizon_row(row) or ladder.step(row.n) is None:
            continue
        if row.long_horizon_status == "blocked" or ladder.step(row.n).reason == "infrastructure":
            continue
        for experiment in row.experiments:
            if not _rejected(experiment):
                continue
            attempted = str(experiment.get("change") or experiment.get("name") or "").strip()
            text = sentences(
                attempted,
                *(str(experiment.get(k) or "") for k in ("result", "evidence", "conclusion")),
            )
            segments.append(
                Segment(
                    f"anti-{row.version}-{experiment['index']:02d}",
                    "anti-strategy",
                    "journal-experiment",
                    "t",
                    row,
                    name(str(experiment.get("name") or attempted)),
                    text=text,
                    attempted=attempted or text,
                    cause=experiment_cause(experiment),
                    split_by="journal",
                    fact_precheck=precheck(text),
                    experiments=[experiment["index"]],
                )
            )
        if row.long_horizon_status == "candidate_ready" and not row.promotion:
            segments.append(_rejected_candidate(row, name, precheck))
    return segments


def _rejected_candidate(
    row: VersionRow, name: Callable[[str], str], precheck: Callable[[str], str]
) -> Segment:
    """A finished candidate the supervisor's A/B verification refused: the episode's one
    lever, its cause in the journal's own words, the gate failure saying by how much."""
    kept = [e for e in row.experiments if not _rejected(e)]
    causes = [c for e in kept if (c := experiment_cause(e))]
    attempted = row.description or sentences(*(str(e.get("change") or "") for e in kept))
    text = sentences(attempted, *causes, row.gate_failure)
    return Segment(
        f"candidate-{row.version}",
        "anti-strategy",
        "rejected-candidate",
        "t",
        row,
        name(attempted or row.subject),
        text=text,
        attempted=attempted or text,
        cause=" ".join(causes),
        split_by="journal",
        fact_precheck=precheck(text),
        experiments=[e["index"] for e in kept],
    )


def _dash_text(subject: str) -> str:
    for sep in ("—", "–"):
        if sep in subject:
            tail = subject.split(sep, 1)[1].replace("dead-end recorded", "").strip(" :")
            if len(tail) >= MIN_ITEM_CHARS:
                return tail
    return ""


def _allocate_ids(segments: list[Segment], ingest: Ingest, existing: tuple[str, ...]) -> None:
    """Per marker, numbers start above the highest suffix among existing ids of this operator
    (the id's operator segment equals the slug, or it is a ``<family>.anti`` id): exact
    segment comparison, so a slug that is a substring of another operator's does not count."""
    meta = ingest.meta
    slug, family = meta.operator_slug, meta.workload_family
    # An anti-strategy id names its workload family; a kernel of no known family (misc)
    # is named by its operator instead, so a softmax dead end does not read "misc".
    anti = f"{slug if family == 'misc' else family}.anti"
    highest: dict[str, int] = {}
    for record_id in existing:
        parts = record_id.split(".")
        ours = (len(parts) > 3 and parts[3] == slug) or f".{anti}." in record_id
        match = _SUFFIX.search(record_id)
        if ours and match:
            letter, number = match.group(1), int(match.group(2))
            highest[letter] = max(highest.get(letter, 0), number)
    product = meta.product or "any"
    order = {"strategy": 0, "anti-strategy": 1, "reference-kernel": 2}
    taken = set(existing)
    for segment in sorted(segments, key=lambda s: order[s.record_type]):
        dsl = segment.row.dsl or "any"
        number = highest.get(segment.marker, 0) + 1
        highest[segment.marker] = number
        middle = anti if segment.record_type == "anti-strategy" else slug
        segment.id = (
            f"{meta.vendor}.{product}.{dsl}.{middle}.{segment.technique}-{segment.marker}"
            f"{number:02d}"
        )
        if segment.id in taken:
            raise ValueError(f"id collision while allocating {segment.id}")
        taken.add(segment.id)
        technique_key = re.sub(r"-+", "_", segment.technique)
        family_key = slug
        segment.episode_key = f"{meta.arch}|{dsl}|{family_key}|{technique_key}|operator"
