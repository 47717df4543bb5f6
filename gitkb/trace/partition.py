"""Partition: the ladder cut into segments, one per future record, with ids and episode keys.

Segment kinds (TRACE_FORMAT §6.4, with gitkb's rules): a strategy per milestone after the
baseline; an anti-strategy per failed lever of a dead-end (list items one each, prose
one per version, long-horizon rejected experiments one each when they clear the
established-fact pre-check); curated pitfalls on versions that produced no dead-end; the
terminal reference kernel. Ids are allocated per marker above the store's existing ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitkb.trace.facts import fact_precheck
from gitkb.trace.ingest import Ingest
from gitkb.trace.ladder import Ladder
from gitkb.trace.memory import VersionRow
from gitkb.trace.naming import slugify
from gitkb.trace.scrub import Scrubber

MIN_ITEM_CHARS = 12

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
    text: str = ""  # the failed lever / pitfall text for anti-strategies
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
    previous = None
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
    deadend_versions = set()
    for step in ladder.deadends:
        row = rows[step.n]
        deadend_versions.add(row.n)
        if row.long_horizon_status:
            for experiment in row.experiments:
                if not _rejected(experiment):
                    continue
                text = " ".join(
                    str(experiment.get(k) or "") for k in ("change", "result", "evidence")
                ).strip()
                segments.append(
                    Segment(
                        f"anti-{row.version}-{experiment['index']:02d}",
                        "anti-strategy",
                        "journal-experiment",
                        "t",
                        row,
                        name(str(experiment.get("name") or experiment.get("change") or "")),
                        text=text,
                        split_by="journal",
                        fact_precheck=precheck(text),
                        experiments=[experiment["index"]],
                    )
                )
            continue
        items = [i for i in row.deadend_items if len(i) >= MIN_ITEM_CHARS]
        if items:
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
                        split_by="mechanical",
                        fact_precheck=precheck(item),
                    )
                )
        else:
            text = row.body or row.description or row.gate_failure or row.subject
            segments.append(
                Segment(
                    f"anti-{row.version}-01",
                    "anti-strategy",
                    "deadend-prose",
                    "t",
                    row,
                    name(_dash_text(row.subject) or row.description or text),
                    text=text,
                    split_by="agent",
                    fact_precheck=precheck(text),
                )
            )
    for row in ingest.rows:
        if row.n in deadend_versions:
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
                    fix=pitfall["fix"],
                    split_by="curated",
                    fact_precheck=precheck(f"{text} {pitfall['fix']}"),
                )
            )
    if ladder.final is not None:
        row = rows[ladder.final]
        segments.append(
            Segment("refk-final", "reference-kernel", "final-kernel", "r", row, "reference-impl")
        )
    megas = [s for s in ladder.milestones if s.kind == "mega"]
    for i, step in enumerate(megas, 1):
        # A mega milestone's own snapshot is a reference kernel too (§6.4).
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
    return decision in ("revert", "reject_and_continue", "pivot")


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
