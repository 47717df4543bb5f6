"""The gates a mining run puts its records through before it writes them anywhere.

Every record-level gate runs: the store gates, and the trace gates judging each record
against the very packets it was distilled from (rule 11: the same scrubbed packet, so
scrubbing never costs a record), with store-overlap against the store when there is one.
``schema`` is left to ``profile``: opt-trace-1.0 only narrows clean-1.3, so every schema
failure is a profile failure too. A dry run of the built-in distiller leaves out the
trace gates that compare a record with its packet (it copied the packet: they hold by
construction), as a preview; whatever is written, staged or admitted, meets them all.
"""

from __future__ import annotations

from gitkb import record as rec
from gitkb.gates import GateContext, StoreReader, TraceSource, run_gates
from gitkb.gates.registry import record_level

COVERED_BY_PROFILE = ("schema",)


BY_CONSTRUCTION = ("verbatim", "no-fabrication", "provenance", "ncu-attribution")


def gate_findings(
    records: list[dict],
    traces: TraceSource | None,
    store_view: StoreReader | None = None,
    label: str = "",
    preview: bool = False,
) -> list[list]:
    """The findings (``gitkb.gates.Finding``) of each record, in the order given."""
    files = [rec.RecordFile(rec.path_for(r), b"", r) for r in records]
    ctx = GateContext(
        records=files,
        store=store_view,
        traces=traces,
        admission="insert",
        trace_label=label,
    )
    left_out = COVERED_BY_PROFILE + (BY_CONSTRUCTION if preview else ())
    gates = [g for g in record_level() if g.name not in left_out]
    by_record: dict[str, list] = {}
    for result in run_gates(ctx, gates):
        for finding in result.findings:
            by_record.setdefault(finding.record_id, []).append(finding)
    return [by_record.get(f.id, []) for f in files]
