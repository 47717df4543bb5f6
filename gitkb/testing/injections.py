"""The gates' injection samples: the shipped example records, and a mined record about to
be inserted into a store that holds its trace; each gate's injection cases mutate them."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from gitkb.gates import Gate, GateContext, InjectionOutcome, run_injections
from gitkb.record import read_folder
from gitkb.record.index import Index, index_entry
from gitkb.testing import trace as sample_trace
from gitkb.util.resources import data_dir

EXAMPLES = "examples"


def example_context() -> GateContext:
    """The shipped example records with a fresh index: the valid sample injection cases mutate."""
    records = read_folder(data_dir("templates") / EXAMPLES)
    index = Index()
    for record_file in records:
        index.put(index_entry(record_file.data, record_file.path))
    return GateContext(records=records, index_raw=index.dumps())


def trace_example_context(workdir: str | os.PathLike) -> GateContext:
    """The trace gates' valid sample, built under ``workdir``: a mined record about to be
    inserted into a store that holds its trace (``gitkb.testing.trace``), so every trace gate
    rebuilds real evidence from the store."""
    store, candidate = sample_trace.sample_store(Path(workdir))
    return GateContext(records=[candidate], store=store.view(), admission="insert")


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
