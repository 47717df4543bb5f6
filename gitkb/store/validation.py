"""Choosing what to validate: a store's main or a records folder (the injection samples are
``gitkb.testing.injections``)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitkb.errors import GitkbError, NotAStore
from gitkb.gates import (
    GateContext,
    GateResult,
    run_gates,
    sharded,
)
from gitkb.gates.registry import by_name
from gitkb.gates.trace_evidence import NO_TRACE, label_of
from gitkb.layout import TRACE_OPTIONS_PATH
from gitkb.record import read_folder
from gitkb.record.index import INDEX_PATH
from gitkb.store import Store
from gitkb.store.gating import gate_context
from gitkb.vcs.plain import git_dir_of

if TYPE_CHECKING:  # type-only here: importing it loads dulwich, which folder_trace alone needs
    from gitkb.trace.sources import TraceRepo


@dataclass
class Validation:
    records: int
    census: str  # ``records: N  (type=count, ...)``
    results: list[GateResult]


def validate(
    path: str | os.PathLike,
    names: tuple[str, ...],
    staging: str | None = None,
    full: bool = False,
    trace: str | os.PathLike | None = None,
    store: str | os.PathLike | None = None,
) -> Validation:
    """``git kb validate``: the gates ``names`` on PATH (see ``context_for``). A plain
    records folder is judged in shards across processes (``gates.sharded``), with the
    same results."""
    folder = Path(path)
    plain = staging is None and trace is None and store is None and not full
    if plain and (folder / "records").is_dir() and git_dir_of(folder) is None:
        index_path = folder / INDEX_PATH
        index_raw = index_path.read_bytes() if index_path.is_file() else None
        return Validation(*sharded.run(folder, names, index_raw))
    ctx = context_for(path, staging, full, trace=trace, store=store)
    return Validation(len(ctx.records), census(ctx), run_gates(ctx, by_name(names)))


def folder_context(folder: str | os.PathLike, full: bool = False) -> GateContext:
    """The gate context of a folder laid out like a store (a staging area, a GPU-wiki tree)."""
    index_path = Path(folder) / INDEX_PATH
    return GateContext(
        records=read_folder(folder),
        index_raw=index_path.read_bytes() if index_path.is_file() else None,
        full=full,
    )


def context_for(
    path: str | os.PathLike,
    staging: str | None = None,
    full: bool = False,
    trace: str | os.PathLike | None = None,
    store: str | os.PathLike | None = None,
) -> GateContext:
    """The gate context for PATH: the committed tree of a store's main, or a folder
    laid out like a store; with ``staging``, that folder checked against the store at PATH.
    A folder's mined records are judged against ``trace`` (the trace repository they were
    mined from) or the traces ``store`` holds."""
    if staging is not None:
        ctx = folder_context(staging, full=full)
        try:
            ctx.store = Store.open(path).view()
        except NotAStore:
            ctx.store = None
        return ctx
    folder = (Path(path) / "records").is_dir()
    if not folder or git_dir_of(Path(path)) is not None:  # a store, or nothing to validate
        try:
            return gate_context(Store.open(path), full=full)
        except NotAStore as exc:
            if not folder:
                message = f"{exc.message}, and {path} has no records/ folder to validate"
                raise GitkbError(message) from None
    ctx = folder_context(path, full=full)
    if store is not None:
        ctx.store = Store.open(store).view()
    if trace is not None:
        ctx.traces = folder_trace(ctx, Path(path), trace)
    return ctx


def folder_trace(ctx: GateContext, folder: Path, trace: str | os.PathLike) -> TraceRepo:
    """The trace at ``trace`` under the label the folder's mined records name (when they
    name one), built with the options mining recorded in the folder's traces/<label>.json."""
    from gitkb.trace.sources import TraceRepo, open_trace, read_options

    repo, head, label = open_trace(Path(trace))
    named = {label_of(data) for _, data in ctx.parsed()} - {None}
    if len(named) == 1:
        label = named.pop()
    options_file = folder / TRACE_OPTIONS_PATH.format(label=label)
    options = read_options(options_file.read_bytes() if options_file.is_file() else None)
    return TraceRepo(repo, head, label, options)


def could_not_run(results: list[GateResult]) -> list[str]:
    """The trace gates that skipped records for want of a trace: running them needs
    ``--trace`` or ``--store``, and leaving them out is a failure, not a pass."""
    return [r.gate.name for r in results if r.status == "SKIP" and r.reason == NO_TRACE]


def census(ctx: GateContext) -> str:
    """``N records (type=count, ...)`` for the report header."""
    counts = Counter(str(r.data.get("type")) if r.data else "unreadable" for r in ctx.records)
    parts = ", ".join(f"{k}={v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
    return f"records: {len(ctx.records)}  ({parts})"
