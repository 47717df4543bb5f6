"""``git kb mine`` / ``git kb recon`` as library calls: trace in, admissions and reports out.

Order of a run: open the trace -> ingest -> ladder -> recon -> partition -> packets ->
distill -> score -> gates -> (store) copy the trace's commits under
``refs/kb/traces/<label>`` -> admit in one write (``gitkb.mine.admit``). A dry run stops
before anything is written; ``stage_only`` writes a folder laid out like a store instead
(``gitkb.mine.stage``). Each admission is complete or absent; records the gates refuse
are skipped with every finding, never half-written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gitkb.errors import GitkbError, writing
from gitkb.mine.checks import gate_findings
from gitkb.mine.distill import Attempt, distill_all, in_process
from gitkb.mine.labels import LabelChoice, choose_label
from gitkb.mine.recon import recon
from gitkb.mine.result import MineResult, Outcome
from gitkb.store import Store
from gitkb.store import config as store_config
from gitkb.trace.ingest import Ingest, ingest
from gitkb.trace.ladder import build_ladder
from gitkb.trace.options import TraceOptions
from gitkb.trace.packets import packets_from
from gitkb.trace.partition import partition
from gitkb.trace.sources import TraceRepo, open_trace, stated_label, usable_label
from gitkb.vcs.repository import Repository

__all__ = ["MineResult", "Outcome", "mine", "run_recon"]


def check_label(label: str | None) -> str | None:
    if label is not None and (not usable_label(label) or label.endswith(".")):
        raise GitkbError(f"--label {label!r} is not usable as a ref name (A-Z a-z 0-9 . _ -)", 2)
    return label


def _ingest(
    trace: str | Path, store: Store | None, label: str | None, options: TraceOptions
) -> tuple[Repository, str, Ingest, LabelChoice]:
    """Open and ingest the trace, then settle its label (rule 15): the packets are built
    under it, and nothing the records say depends on it."""
    repo, head, own = open_trace(trace)
    own_basis = "solution.json trace_label" if stated_label(repo, head) else "the folder name"
    ingested = ingest(repo, head, own, options)
    choice = choose_label(ingested, own, own_basis, check_label(label), store)
    ingested.meta.label = choice.label
    return repo, head, ingested, choice


def with_store_config(store: Store | None, options: TraceOptions) -> TraceOptions:
    """Options the store's ``gitkb.toml`` sets (``[mine] non_target_kernels``), unless the
    command line set them."""
    if store is None or options.non_target_kernels:
        return options
    kernels = store_config.parse(store.config(), str(store.location)).non_target_kernels
    if kernels:
        options.non_target_kernels = kernels
    return options


def _store_options(store: Store | None, ingested: Ingest, options: TraceOptions) -> TraceOptions:
    """Options completed from the store: its ids and the traces it holds this operator from."""
    if store is None:
        return options
    view = store.view()
    rows = view.scoped_rows(family=ingested.meta.operator_slug)
    sources = {row.source or "(unrecorded)" for row in rows if row.entry is not None}
    options.existing_ids = tuple(sorted(set(options.existing_ids) | set(view.ids())))
    options.store_sources = tuple(sorted(sources))
    return options


def run_recon(
    trace: str | Path,
    store: Store | None = None,
    label: str | None = None,
    options: TraceOptions | None = None,
) -> dict:
    """``git kb recon``: ingest and recon only; nothing is written."""
    options = with_store_config(store, options or TraceOptions())
    _, _, ingested, choice = _ingest(trace, store, label, options)
    ladder = build_ladder(ingested.rows)
    return recon(ingested, ladder, store, choice)


def mine(
    trace: str | Path,
    store: Store | None = None,
    label: str | None = None,
    options: TraceOptions | None = None,
    distiller: str = "builtin",
    stage_only: str | Path | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
    jobs: int = 1,
) -> MineResult:
    admitting = not dry_run and stage_only is None
    if admitting and store is None:
        raise GitkbError("mining needs a store, --stage-only DIR or --dry-run", 2)
    if admitting:
        store.require_signing()
    options = with_store_config(store, options or TraceOptions())
    repo, head, ingested, choice = _ingest(trace, store, label, options)
    label = choice.label
    ladder = build_ladder(ingested.rows)
    recon_doc = recon(ingested, ladder, store, choice)
    options = _store_options(store, ingested, options)
    segments = partition(ingested, ladder, tuple(options.existing_ids))
    packets = packets_from(repo, ingested, ladder, segments, options)
    # Records meet the very packets they came from. With a store and the built-in
    # distiller the gates run once, at admission; an external distiller's records are
    # checked first so a refused one can have its second try.
    traces = TraceRepo(repo, head, label, options, packets, ingested.commits)
    view = store.view() if store is not None else None

    def check(records: list[dict]) -> list[list]:
        preview = dry_run and in_process(distiller)
        return gate_findings(records, traces, view, label, preview)

    precheck = None if admitting and in_process(distiller) else check
    attempts = distill_all(packets, distiller, jobs, progress, precheck)
    outcomes, ready, refused = _sort(attempts)
    result = MineResult(label, head, ingested, ladder, recon_doc, segments, outcomes, {}, choice)
    if admitting:
        from gitkb.mine.admit import admit

        admit(store, trace, result, options, ready, outcomes)
        return result
    if dry_run:
        outcomes += [
            Outcome(
                a.packet.seg_id,
                a.packet.record_type,
                "dry-run",
                a.result.record["id"],
                missing=a.result.missing,
                retried=a.retried,
            )
            for a in ready
        ]
    else:
        from gitkb.mine.stage import stage, write_reports

        with writing(stage_only):
            outcomes += stage(Path(stage_only), result, options, packets, ready, refused)
    result.outcomes = result.in_segment_order(outcomes)
    if stage_only is not None:  # a dry run writes nothing, reports included
        result.reports = result.report_files()
        with writing(stage_only):
            write_reports(Path(stage_only), result)
    return result


def _sort(attempts: list[Attempt]) -> tuple[list[Outcome], list, list]:
    """(outcomes of the skipped and refused, attempts ready to write, attempts refused)."""
    outcomes, ready, refused = [], [], []
    for attempt in attempts:
        packet, result = attempt.packet, attempt.result
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
                    retried=attempt.retried,
                )
            )
        elif attempt.findings:
            lines = [f.line() for f in attempt.findings]
            more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
            outcomes.append(
                Outcome(
                    packet.seg_id,
                    packet.record_type,
                    "skip",
                    result.record.get("id"),
                    f"refused by the gates: {lines[0]}{more}",
                    missing=result.missing,
                    lever=packet.agent_facing.get("the_failed_lever", ""),
                    findings=lines,
                    retried=attempt.retried,
                )
            )
            refused.append(attempt)
        else:
            ready.append(attempt)
    return outcomes, ready, refused
