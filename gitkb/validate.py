"""Choosing what to validate: a store's main, a records folder, or the injection sample."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from gitkb.errors import GitkbError, NotAStore
from gitkb.gates import GateContext
from gitkb.record import Index, index_entry
from gitkb.resources import data_dir
from gitkb.store import Store, folder_context, read_folder

EXAMPLES = "examples"


def context_for(
    path: str | os.PathLike, staging: str | None = None, full: bool = False
) -> GateContext:
    """The gate context for PATH: the committed tree of a store's main, or a folder
    laid out like a store; with ``staging``, that folder checked against the store at PATH."""
    if staging is not None:
        ctx = folder_context(staging, full=full)
        try:
            ctx.store = Store.open(path)
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


def census(ctx: GateContext) -> str:
    """``N records (type=count, ...)`` for the report header."""
    counts = Counter(r.data.get("type") if r.data else "unreadable" for r in ctx.records)
    parts = ", ".join(f"{k}={v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
    return f"records: {len(ctx.records)}  ({parts})"
