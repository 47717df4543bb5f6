"""``git kb mine`` / ``git kb recon`` as library calls: trace in, admissions and reports out.

Order of a run: open the trace -> ingest -> ladder -> recon -> partition -> packets ->
distill -> score -> local gates -> (store) copy the trace's commits under
``refs/kb/traces/<label>`` -> match -> admit (one commit per record) -> reports commit.
A dry run stops before the store is touched; ``stage_only`` writes a folder laid out
like a store instead. Each admission is complete or absent; records the gates refuse
are skipped with the reason, never half-written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gitkb import record as rec
from gitkb.errors import GitkbError, NotARepository, writing
from gitkb.mine import reports
from gitkb.mine.distill import Distilled
from gitkb.mine.distill.builtin import distill
from gitkb.mine.distill.external import run_external
from gitkb.mine.recon import recon
from gitkb.record.index import INDEX_PATH, Index, index_entry
from gitkb.store import layout
from gitkb.store.writer import Change
from gitkb.trace import TraceError
from gitkb.trace.ingest import Ingest, ingest
from gitkb.trace.ladder import Ladder, build_ladder
from gitkb.trace.options import TraceOptions
from gitkb.trace.packets import Packet, packets_from
from gitkb.trace.partition import Segment, partition
from gitkb.vcs.repository import Repository

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass
class Outcome:
    seg_id: str
    record_type: str
    action: str  # insert, confirm, conflict, skip, staged, dry-run
    record_id: str | None
    note: str = ""
    commit: str | None = None
    missing: list[str] = field(default_factory=list)
    lever: str = ""  # an anti-strategy's lever, scrubbed, so a reader sees what was skipped


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

    def summary(self) -> dict:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.action] = counts.get(outcome.action, 0) + 1
        missing: dict[str, list[str]] = {}
        for outcome in self.outcomes:
            fields = missing.setdefault(outcome.record_type, [])
            fields += [m for m in outcome.missing if m not in fields]
        kinds = [s.seg_kind for s in self.segments]
        return {
            "label": self.label,
            "head": self.head,
            "versions": len(self.ingest.rows),
            "milestones": sum(1 for s in self.ladder.milestones if s.kind != "baseline"),
            "deadends": len(self.ladder.deadends),
            "pitfalls": kinds.count("curated-pitfall"),
            "counts": counts,
            "outcomes": [o.__dict__ for o in self.outcomes],
            "missing_by_type": missing,
            "degraded_versions": [r.version for r in self.ingest.rows if r.problems],
        }


def open_trace(path: str | Path) -> tuple[Repository, str, str]:
    """(repository, HEAD commit, default label) of a trace; one clear error when unusable.

    The default label is the one the trace states (``solution.json`` ``trace_label`` at
    HEAD, written by ``git kb optimize`` and named in its KB-Trace trailer), else the
    trace folder's name.
    """
    location = Path(path)
    try:
        repo = Repository.open(location)
    except NotARepository:
        raise TraceError(f"{location}: not a git repository") from None
    head = repo.resolve("HEAD")
    if head is None:
        raise TraceError(f"{location}: the repository has no commits")
    if repo.object_type(head) != "commit":
        raise TraceError(f"{location}: HEAD is not a commit")
    stated = _stated_label(repo, head)
    if stated is not None:
        return repo, head, stated
    name = location.resolve().name
    return repo, head, name.removesuffix(".git") or name


def _stated_label(repo: Repository, head: str) -> str | None:
    raw = repo.read(head, "solution.json")
    try:
        label = json.loads(raw).get("trace_label") if raw else None
    except (ValueError, AttributeError):
        return None
    if isinstance(label, str) and _LABEL.fullmatch(label) and ".." not in label:
        return label
    return None


def store_if_any(path) -> object | None:
    """The store at ``path``, or None when there is none (dry runs and recon only read one)."""
    from gitkb.store import Store

    try:
        return Store.open(path)
    except GitkbError:
        return None


def check_label(label: str) -> str:
    if not _LABEL.fullmatch(label) or ".." in label or label.endswith((".lock", ".")):
        raise GitkbError(f"--label {label!r} is not usable as a ref name (A-Z a-z 0-9 . _ -)", 2)
    return label


def check_label_use(label: str, ingested: Ingest) -> None:
    """The label names a ref and a report folder, so it may hold no private word; and it is
    ``evidence.raw.source_repo``, which no served field may echo (raw-isolation), so it
    may not be part of the operator's name either."""
    if ingested.scrubber.mentions_private(label):
        raise GitkbError(
            f"the trace label {label!r} holds a denylisted term or a user name from the "
            "trace's paths, and would name the store's trace ref and report folder; "
            "pass --label NAME",
            2,
        )
    slug = ingested.meta.operator_slug
    if label.lower() in slug or label.lower() in ingested.meta.operator_name.lower():
        raise GitkbError(
            f"the trace label {label!r} is part of the operator name {slug!r}: every served "
            "record would echo evidence.raw.source_repo and raw-isolation would refuse it; "
            "pass --label NAME (e.g. kernel_opt_<n>_<operator>)",
            2,
        )


def _store_options(store, ingested: Ingest, options: TraceOptions) -> TraceOptions:
    """Options completed from the store: its ids and the traces it holds this operator from."""
    if store is None:
        return options
    view = store.view()
    rows = view.scoped_rows(family=ingested.meta.operator_slug)
    sources = {row.source or "(unrecorded)" for row in rows if row.entry is not None}
    options.existing_ids = tuple(sorted(set(options.existing_ids) | set(view.ids())))
    options.store_sources = tuple(sorted(sources))
    return options


def run_recon(trace: str | Path, store=None, label: str | None = None, options=None) -> dict:
    """``git kb recon``: ingest and recon only; nothing is written."""
    repo, head, default_label = open_trace(trace)
    label = check_label(label or default_label)
    options = options or TraceOptions()
    ingested = ingest(repo, head, label, options)
    ladder = build_ladder(ingested.rows)
    return recon(ingested, ladder, store)


def _local_findings(record: dict) -> list[str]:
    """The record-level store gates and the opt-trace-1.0 profile, without a store."""
    from gitkb import schema
    from gitkb.gates import GateContext, run_gates
    from gitkb.gates.registry import record_level

    path = rec.path_for(record)
    ctx = GateContext(records=[rec.RecordFile(path, rec.dumps(record), record)])
    gates = [g for g in record_level() if g.family == "store"]
    found = [f.line() for r in run_gates(ctx, gates) for f in r.findings]
    found += [f"profile: {p}: {m}" for p, m in schema.errors(record, "opt-trace-1.0", limit=4)]
    return found


def mine(
    trace: str | Path,
    store=None,
    label: str | None = None,
    options: TraceOptions | None = None,
    distiller: str = "builtin",
    stage_only: str | Path | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> MineResult:
    repo, head, default_label = open_trace(trace)
    label = check_label(label or default_label)
    options = options or TraceOptions()
    ingested = ingest(repo, head, label, options)
    check_label_use(label, ingested)
    ladder = build_ladder(ingested.rows)
    recon_doc = recon(ingested, ladder, store)
    options = _store_options(store, ingested, options)
    segments = partition(ingested, ladder, tuple(options.existing_ids))
    packets = packets_from(repo, ingested, ladder, segments, options)
    distilled: list[tuple[Packet, Distilled]] = []
    for done, packet in enumerate(packets, 1):
        result = distill(packet) if distiller == "builtin" else run_external(distiller, packet)
        distilled.append((packet, result))
        if progress:
            progress(done, len(packets))
    outcomes: list[Outcome] = []
    ready: list[tuple[Packet, Distilled]] = []
    for packet, result in distilled:
        if result.record is None:
            outcomes.append(
                Outcome(
                    packet.seg_id,
                    packet.record_type,
                    "skip",
                    None,
                    result.skipped,
                    missing=result.missing,
                    lever=packet.agent_facing.get("the_failed_lever", ""),
                )
            )
            continue
        # With a store the gates run once, at admission, against the store.
        problems = _local_findings(result.record) if store is None or dry_run or stage_only else []
        if problems:
            outcomes.append(
                Outcome(
                    packet.seg_id,
                    packet.record_type,
                    "skip",
                    result.record.get("id"),
                    "refused by the gates: " + problems[0],
                    missing=result.missing,
                )
            )
            continue
        ready.append((packet, result))
    result = MineResult(label, head, ingested, ladder, recon_doc, segments, outcomes, {})
    if dry_run:
        outcomes += [
            Outcome(p.seg_id, p.record_type, "dry-run", d.record["id"], missing=d.missing)
            for p, d in ready
        ]
    elif stage_only is not None:
        with writing(stage_only):
            outcomes += _stage(Path(stage_only), ready)
    elif store is not None:
        _admit(store, trace, result, options, ready)
        return result
    else:
        raise GitkbError("mining needs a store, --stage-only DIR or --dry-run", 2)
    result.outcomes = _in_segment_order(outcomes, segments)
    result.reports = _reports(result)
    if stage_only is not None:
        with writing(stage_only):
            for name, data in result.reports.items():
                target = Path(stage_only) / layout.REPORTS_DIR.format(label=label) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
    return result


def _in_segment_order(outcomes: list[Outcome], segments: list[Segment]) -> list[Outcome]:
    order = {s.seg_id: i for i, s in enumerate(segments)}
    return sorted(outcomes, key=lambda o: order.get(o.seg_id, len(order)))


def _reports(result: MineResult) -> dict[str, bytes]:
    """The committed reports, every string of them scrubbed of private text (rule 11)."""
    private = result.ingest.scrubber.private_value
    summary = private(result.summary())
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
        for s in result.segments
    ]
    recon_doc, segments = private(result.recon), private(segments)
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


def _stage(folder: Path, ready: list[tuple[Packet, Distilled]]) -> list[Outcome]:
    from gitkb.fs import atomic_write

    index_path = folder / INDEX_PATH
    index = Index.parse(index_path.read_bytes() if index_path.is_file() else None)
    outcomes = []
    for packet, result in ready:
        record = result.record
        path = rec.path_for(record)
        atomic_write(folder / path, rec.dumps(record))
        index.put(index_entry(record, path))
        outcomes.append(
            Outcome(
                packet.seg_id,
                packet.record_type,
                "staged",
                record["id"],
                path,
                missing=result.missing,
            )
        )
    atomic_write(index_path, index.dumps())
    return outcomes


def _admit(store, trace, result: MineResult, options, ready) -> None:
    """Admit the run in one write: the trace's mining options, one admission per record
    (the store's policy decides insert, confirm or conflict, and the gates run once, at
    admission), then the reports, written last so they tell what happened."""
    from gitkb.store.admission import AUTO, AdmitRequest, builder

    label = result.label
    _copy_trace(store, trace, result.head, label)
    outcomes = list(result.outcomes)
    by_seg: dict[str, Outcome] = {}
    builds = [_options_change(store, label, result.head, options)]
    for packet, distilled in ready:
        record = distilled.record
        version = packet.provenance["version"]
        request = AdmitRequest(
            rec.dumps(record),
            AUTO,
            source=packet.seg_id,
            trace=label,
            trace_commit=packet.provenance["git_commit"],
            body=f"Mined from trace {label}, {version} ({packet.seg_kind}).",
        )
        builds.append(builder(request))
        outcome = Outcome(
            packet.seg_id, packet.record_type, "insert", record["id"], missing=distilled.missing
        )
        outcomes.append(outcome)
        by_seg[packet.seg_id] = outcome
    order = [p.seg_id for p, _ in ready]

    def reports(view) -> Change:
        # The record builders ran just before this one, one admission each.
        records = view.admitted[len(view.admitted) - len(order) :]
        for seg_id, admission in zip(order, records, strict=True):
            _note_admission(by_seg[seg_id], admission)
        result.outcomes = _in_segment_order(outcomes, result.segments)
        result.reports = _reports(result)
        base = layout.REPORTS_DIR.format(label=label)
        edits = {
            f"{base}/{name}": data
            for name, data in result.reports.items()
            if view.repo.read(view.tip, f"{base}/{name}") != data
        }
        return Change(
            "report",
            label,
            edits,
            path=base,
            body=f"Mining reports of trace {label}.",
            trailers=[("KB-Trace", label)],
            note="" if edits else "reports unchanged",
        )

    store.commit([*builds, reports], on_refusal="skip")


def _note_admission(outcome: Outcome, admission) -> None:
    if admission.action == "refused":
        outcome.action, outcome.note = "skip", f"refused at admission: {admission.note}"
        return
    outcome.action = admission.action
    outcome.commit = admission.commit
    outcome.record_id = admission.record_id
    if admission.note:
        outcome.note = admission.note


def _copy_trace(store, trace, head: str, label: str) -> None:
    ref = layout.trace_ref(label)
    current = store.repo.resolve(ref)
    if current is not None and current != head and not _descends(store, trace, current, head):
        raise GitkbError(
            f"the store already holds a different history for trace {label} ({ref} at "
            f"{current[:12]}); mine it under another --label"
        )
    store.repo.fetch_into(str(trace), head, ref)


def _descends(store, trace, current: str, head: str) -> bool:
    trace_repo = Repository.open(trace)
    return trace_repo.has_object(current) and trace_repo.is_ancestor(current, head)


def _options_change(store, label: str, head: str, options: TraceOptions):
    """The run's hardware/dsl overrides, kept on main so the trace gates rebuild the
    packets the way this run built them; a change only when something changed."""
    path = layout.TRACE_OPTIONS_PATH.format(label=label)
    document = {"label": label, "ref": layout.trace_ref(label), **options.stored()}
    data = (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()

    def build(view) -> Change:
        if view.repo.read(view.tip, path) == data:
            return Change("trace", label, {}, path=path, note="unchanged")
        return Change(
            "trace",
            label,
            {path: data},
            path=path,
            body=f"Trace {label} copied under {document['ref']}; how its packets are built.",
            trailers=[("KB-Trace", label), ("KB-Trace-Commit", head)],
        )

    return build
