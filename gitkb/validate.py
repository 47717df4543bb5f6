"""Choosing what to validate: a store's main, a records folder, or the injection sample."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from gitkb.errors import GitkbError, NotAStore
from gitkb.gates import Gate, GateContext, InjectionOutcome, run_injections
from gitkb.record import read_folder
from gitkb.record.index import INDEX_PATH, Index, index_entry
from gitkb.resources import data_dir
from gitkb.store import Store

EXAMPLES = "examples"


def folder_context(folder: str | os.PathLike, full: bool = False) -> GateContext:
    """The gate context of a folder laid out like a store (a staging area, a GPU-wiki tree)."""
    index_path = Path(folder) / INDEX_PATH
    return GateContext(
        records=read_folder(folder),
        index_raw=index_path.read_bytes() if index_path.is_file() else None,
        full=full,
    )


def context_for(
    path: str | os.PathLike, staging: str | None = None, full: bool = False
) -> GateContext:
    """The gate context for PATH: the committed tree of a store's main, or a folder
    laid out like a store; with ``staging``, that folder checked against the store at PATH."""
    if staging is not None:
        ctx = folder_context(staging, full=full)
        try:
            ctx.store = Store.open(path).view()
        except NotAStore:
            ctx.store = None
        return ctx
    try:
        return Store.open(path).gate_context(full=full)
    except NotAStore as exc:
        if (Path(path) / "records").is_dir():
            return folder_context(path, full=full)
        raise GitkbError(f"{exc.message}, and {path} has no records/ folder to validate") from None


def example_context() -> GateContext:
    """The shipped example records with a fresh index: the valid sample injection cases mutate."""
    records = read_folder(data_dir("templates") / EXAMPLES)
    index = Index()
    for record_file in records:
        index.put(index_entry(record_file.data, record_file.path))
    return GateContext(records=records, index_raw=index.dumps())


def trace_example_context(workdir: str | os.PathLike) -> GateContext:
    """The trace gates' valid sample, built under ``workdir``: a mined record about to be
    inserted into a store that holds its trace (``gitkb.examples``), so every trace gate
    rebuilds real evidence from the store."""
    from gitkb import examples

    store, candidate = examples.sample_store(workdir)
    return GateContext(records=[candidate], store=store.view(), extra={"admission": "insert"})


def injection_outcomes(gates: Iterable[Gate]) -> list[InjectionOutcome]:
    """Every injection case of ``gates``: store gates on the shipped examples, trace gates
    on the example trace's sample (built in a temporary folder, removed afterwards)."""
    gates = list(gates)
    store_gates = [g for g in gates if g.family != "trace"]
    trace_gates = [g for g in gates if g.family == "trace"]
    outcomes = run_injections(example_context(), store_gates) if store_gates else []
    if trace_gates:
        with tempfile.TemporaryDirectory(prefix="gitkb-injections-") as workdir:
            outcomes += run_injections(trace_example_context(workdir), trace_gates)
    return outcomes


def census(ctx: GateContext) -> str:
    """``N records (type=count, ...)`` for the report header."""
    counts = Counter(str(r.data.get("type")) if r.data else "unreadable" for r in ctx.records)
    parts = ", ".join(f"{k}={v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
    return f"records: {len(ctx.records)}  ({parts})"
