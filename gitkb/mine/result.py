"""What a mining run did: one outcome per segment, the run's summary, and the reports
committed beside the records (every string of them scrubbed of private text)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitkb.mine import reports
from gitkb.mine.labels import LabelChoice
from gitkb.trace.ingest import Ingest
from gitkb.trace.ladder import Ladder
from gitkb.trace.partition import Segment

ACTIONS = ("insert", "confirm", "conflict", "skip", "staged", "dry-run")
# The fields a distiller fills only where the packet states them (docs/trace-format.md, rule 13).
FILLED_FIELDS = {
    "strategy": (
        "payload.mechanism",
        "payload.applies_when",
        "payload.problem.bottleneck",
        "retrieval.signals.symptoms",
        "payload.next_steps",
        "payload.implementation.snippet",
    ),
    "anti-strategy": (
        "payload.hypothesis",
        "payload.observed",
        "payload.problem.bottleneck",
        "retrieval.signals.symptoms",
        "payload.would_retry_if",
    ),
}


def missing_field(entry: str) -> tuple[str, str]:
    """(field, why) of a distiller's ``missing`` entry, ``field (why)`` or a bare field."""
    field, _, why = entry.partition(" (")
    return field.strip(), why.rstrip(")").strip() or "the packet states none"


@dataclass
class Outcome:
    seg_id: str
    record_type: str
    action: str  # one of ACTIONS
    record_id: str | None
    note: str = ""
    commit: str | None = None
    missing: list[str] = field(default_factory=list)
    lever: str = ""  # an anti-strategy's lever, scrubbed, so a reader sees what was skipped
    findings: list[str] = field(default_factory=list)  # every gate finding of a refused record
    retried: bool = False  # the distiller had a second try with the first one's findings


@dataclass
class MineResult:
    label: str
    head: str
    ingest: Ingest
    ladder: Ladder
    recon: dict
    segments: list[Segment]
    outcomes: list[Outcome]
    reports: dict[str, bytes]
    label_choice: LabelChoice

    def summary(self) -> dict:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.action] = counts.get(outcome.action, 0) + 1
        missing: dict[str, list[str]] = {}
        for outcome in self.outcomes:
            fields = missing.setdefault(outcome.record_type, [])
            fields += [f for f, _ in map(missing_field, outcome.missing) if f not in fields]
        kinds = [s.seg_kind for s in self.segments]
        return {
            "label": self.label,
            "label_basis": self.label_choice.basis,
            "label_note": self.label_choice.note(),
            "head": self.head,
            "versions": len(self.ingest.rows),
            "milestones": sum(1 for s in self.ladder.milestones if s.kind != "baseline"),
            "deadends": len(self.ladder.deadends),
            "pitfalls": kinds.count("curated-pitfall"),
            "counts": counts,
            "outcomes": [o.__dict__ for o in self.outcomes],
            "missing_by_type": missing,
            "fields_by_type": self.fields_by_type(),
            "degraded_versions": [r.version for r in self.ingest.rows if r.problems],
        }

    def fields_by_type(self) -> dict[str, dict[str, dict]]:
        """Per record type and field the distiller fills: how many written records got it,
        and why the others did not (the distiller's reasons, counted)."""
        out: dict[str, dict[str, dict]] = {}
        for outcome in self.outcomes:
            if outcome.action == "skip" or outcome.record_type not in FILLED_FIELDS:
                continue
            fields = out.setdefault(
                outcome.record_type,
                {
                    f: {"records": 0, "filled": 0, "missing_because": {}}
                    for f in FILLED_FIELDS[outcome.record_type]
                },
            )
            absent = dict(map(missing_field, outcome.missing))
            for name, counts in fields.items():
                counts["records"] += 1
                if name in absent:
                    why = counts["missing_because"]
                    why[absent[name]] = why.get(absent[name], 0) + 1
                else:
                    counts["filled"] += 1
        return out

    def in_segment_order(self, outcomes: list[Outcome]) -> list[Outcome]:
        order = {s.seg_id: i for i, s in enumerate(self.segments)}
        return sorted(outcomes, key=lambda o: order.get(o.seg_id, len(order)))

    def report_files(self) -> dict[str, bytes]:
        """The committed reports (file name -> bytes), scrubbed of private text (rule 11)."""
        private = self.ingest.scrubber.private_value
        summary = private(self.summary())
        segments = [
            {
                "seg_id": s.seg_id,
                "record_type": s.record_type,
                "seg_kind": s.seg_kind,
                "id": s.id,
                "episode_key": s.episode_key,
                "version": s.row.version,
                "fact_precheck": s.fact_precheck,
            }
            for s in self.segments
        ]
        recon_doc, segments = private(self.recon), private(segments)
        files = {
            "recon.md": reports.recon_markdown(recon_doc).encode(),
            "recon.json": reports.dumps(recon_doc),
            "partition.md": reports.partition_markdown(segments).encode(),
            "mine.md": reports.mine_markdown(summary).encode(),
            "mine.json": reports.dumps(summary),
        }
        if recon_doc["long_horizon"]:
            files["long-horizon.md"] = reports.long_horizon_markdown(recon_doc, segments).encode()
        return files
