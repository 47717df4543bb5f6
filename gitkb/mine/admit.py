"""Admitting a mining run into a store through its one write path: one ``store.commit``
holding the trace's options, one AUTO admission per record (the store's admission policy
decides insert, confirm or conflict, and the gates run once, at admission), then the
reports, written last so they tell what happened."""

from __future__ import annotations

import json
from pathlib import Path

from gitkb import layout
from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.mine.distill import Attempt
from gitkb.mine.labels import LabelChoice
from gitkb.mine.result import MineResult, Outcome
from gitkb.store import Store
from gitkb.store.request import AdmitRequest
from gitkb.store.view import StoreView
from gitkb.store.writer import Admission, Builder, Change
from gitkb.trace.options import TraceOptions
from gitkb.vcs.repository import Repository


def options_document(label: str, options: TraceOptions, choice: LabelChoice) -> bytes:
    """``traces/<label>.json``: how this run built its packets, so the trace gates rebuild
    them the same way (in a store, and in a staging folder for ``validate --trace``)."""
    document = {"label": label, "ref": layout.trace_ref(label), **choice.stored()}
    document |= options.stored()
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()


def admit(
    store: Store,
    trace: str | Path,
    result: MineResult,
    options: TraceOptions,
    ready: list[Attempt],
    outcomes: list[Outcome],
) -> None:
    """``ready``: the attempts whose records are to be admitted; ``outcomes``: what became
    of the others. Fills ``result.outcomes`` and ``result.reports``."""
    from gitkb.store.admission import AUTO, builder

    label = result.label
    _copy_trace(store, trace, result.head, label)
    outcomes = list(outcomes)
    by_seg: dict[str, Outcome] = {}
    builds = [
        _options_change(label, result.head, options_document(label, options, result.label_choice))
    ]
    for attempt in ready:
        packet, record = attempt.packet, attempt.result.record
        request = AdmitRequest(
            rec.dumps(record),
            AUTO,
            source=packet.seg_id,
            trace=label,
            trace_commit=packet.provenance["git_commit"],
            body=f"Mined from trace {label}, {packet.provenance['version']} ({packet.seg_kind}).",
        )
        builds.append(builder(request))
        outcome = Outcome(
            packet.seg_id,
            packet.record_type,
            "insert",
            record["id"],
            missing=attempt.result.missing,
            retried=attempt.retried,
        )
        outcomes.append(outcome)
        by_seg[packet.seg_id] = outcome
    order = [a.packet.seg_id for a in ready]

    def reports(view: StoreView) -> Change:
        # The record builders ran just before this one, one admission each.
        records = view.admitted[len(view.admitted) - len(order) :]
        for seg_id, admission in zip(order, records, strict=True):
            _note_admission(by_seg[seg_id], admission)
        result.outcomes = result.in_segment_order(outcomes)
        result.reports = result.report_files()
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


def _note_admission(outcome: Outcome, admission: Admission) -> None:
    if admission.action == "refused":
        outcome.action, outcome.note = "skip", f"refused at admission: {admission.note}"
        return
    outcome.action = admission.action
    outcome.commit = admission.commit
    outcome.record_id = admission.record_id
    if admission.note:
        outcome.note = admission.note


def _copy_trace(store: Store, trace: str | Path, head: str, label: str) -> None:
    ref = layout.trace_ref(label)
    current = store.repo.resolve(ref)
    if current is not None and current != head and not _descends(trace, current, head):
        raise GitkbError(
            f"the store already holds a different history for trace {label} ({ref} at "
            f"{current[:12]}); mine it under another --label"
        )
    store.copy_trace(str(trace), head, ref)


def _descends(trace: str | Path, current: str, head: str) -> bool:
    trace_repo = Repository.open(trace)
    return trace_repo.has_object(current) and trace_repo.is_ancestor(current, head)


def _options_change(label: str, head: str, data: bytes) -> Builder | None:
    """The run's options, kept on main so the trace gates rebuild the packets the way
    this run built them; a change only when something changed."""
    path = layout.TRACE_OPTIONS_PATH.format(label=label)

    def build(view: StoreView) -> Change:
        if view.repo.read(view.tip, path) == data:
            return Change("trace", label, {}, path=path, note="unchanged")
        return Change(
            "trace",
            label,
            {path: data},
            path=path,
            body=f"Trace {label} copied under {layout.trace_ref(label)}; how its packets are "
            "built.",
            trailers=[("KB-Trace", label), ("KB-Trace-Commit", head)],
        )

    return build
