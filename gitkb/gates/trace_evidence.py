"""The evidence the trace gates judge a record by, rebuilt from the trace's own objects.

A record is *mined* when ``evidence.raw.source_repo`` is a non-empty string: that
string is the trace label. The context's trace source (``ctx.traces``: one trace
repository, ``git kb validate DIR --trace PATH`` or a mining run's own; else the store's
``refs/kb/traces/<label>``) gives the trace's commits, from which the packet a record was
distilled from is rebuilt (``gitkb.trace.sources``), so a gate needs no scratch files, on
a laptop or in a server hook alike.

Everything is cached on the gate context (``ctx.evidence_cache``): one trace's packets are
rebuilt once per context; an injection case's context holds its own deep copy, so it
may mutate the evidence without touching anyone else's.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitkb.errors import GitkbError
from gitkb.gates import GateContext, Skip, TraceSource
from gitkb.gates.evidence_cache import EvidenceCache, TraceEntry

if TYPE_CHECKING:
    from gitkb.record import RecordFile
    from gitkb.trace.packets import Packet
    from gitkb.vcs.repository import Repository

# A label becomes a ref name component: git's rules, narrowed to what traces use.
_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*")


def is_mined(data: dict) -> bool:
    return bool(label_of(data))


def label_of(data: dict) -> str | None:
    """The trace label a record names (``evidence.raw.source_repo``), or None."""
    raw = raw_of(data)
    label = raw.get("source_repo")
    return label if isinstance(label, str) and label.strip() else None


def raw_of(data: dict) -> dict:
    evidence = data.get("evidence")
    raw = evidence.get("raw") if isinstance(evidence, dict) else None
    return raw if isinstance(raw, dict) else {}


def mined_records(
    ctx: GateContext, also: Callable[[dict], bool] | None = None
) -> list[tuple[RecordFile, dict]]:
    """The (record file, data) pairs a trace gate checks: the mined records, plus those
    ``also(data)`` selects. Raises Skip when the context holds none of them."""
    found = [(f, d) for f, d in ctx.parsed() if is_mined(d) or (also is not None and also(d))]
    if not found:
        raise Skip("no mined record: none names its trace in evidence.raw.source_repo")
    return found


NO_TRACE = "no trace: pass --trace PATH, or --store STORE holding refs/kb/traces/<label>"


def source(ctx: GateContext) -> TraceSource | None:
    """Where this context finds traces: its own trace source, else the store's copies."""
    if ctx.traces is not None:
        return ctx.traces
    if ctx.store is None:
        return None
    from gitkb.trace.sources import StoreTraces

    ctx.traces = StoreTraces(ctx.store)
    return ctx.traces


def require_traces(ctx: GateContext) -> None:
    if source(ctx) is None:
        raise Skip(NO_TRACE)


def trace_repo(ctx: GateContext, label: str) -> Repository:
    """The repository that holds trace ``label``'s commits (``require_traces`` first)."""
    return source(ctx).repo(label)


@dataclass
class TraceEvidence:
    """One record's trace: its label, the trace ref's tip in the store (None when the
    store lacks it), and the packet rebuilt for the record (None when there is none)."""

    label: str
    tip: str | None
    packet: Packet | None
    problem: str = ""  # why there is no tip or no packet, in words


def _cache(ctx: GateContext) -> EvidenceCache:
    if ctx.evidence_cache is None:
        ctx.evidence_cache = EvidenceCache()
    return ctx.evidence_cache


def _trace(ctx: GateContext, label: str) -> TraceEntry:
    cache = _cache(ctx)
    trace = cache.traces.get(label)
    if trace is None:
        if not _LABEL.fullmatch(label) or ".." in label or label.endswith((".lock", ".")):
            trace = TraceEntry(None, f"source_repo {label!r} is not a usable trace label")
        else:
            trace = TraceEntry(*source(ctx).tip(label))
        cache.traces[label] = trace
    return trace


def trace_tip(ctx: GateContext, label: str) -> tuple[str | None, str]:
    """The tip of trace ``label`` (in the store: ``refs/kb/traces/<label>``) and, when
    absent, why."""
    trace = _trace(ctx, label)
    return trace.tip, trace.problem


def packets(ctx: GateContext, label: str) -> list:
    """This context's own copy of the packets rebuilt from the trace (empty when the
    trace is missing or its packets cannot be built; ``packet_problem`` says why)."""
    trace = _trace(ctx, label)
    if trace.packets is None:
        trace.packets = []
        if trace.tip is not None:
            try:
                built = source(ctx).packets(label)
            except GitkbError as exc:
                trace.packet_error = f"the packets of trace {label} cannot be rebuilt: {exc}"
            else:
                # Gates only read; an injection case mutates, so it gets its own copy.
                own = ctx.mutable_evidence
                trace.packets = copy.deepcopy(list(built)) if own else list(built)
    return trace.packets


def evidence(ctx: GateContext, data: dict) -> TraceEvidence:
    """The evidence of one mined record (``require_traces`` first)."""
    label = label_of(data) or ""
    trace = _trace(ctx, label)
    if trace.tip is None:
        return TraceEvidence(label, None, None, trace.problem)
    from gitkb.trace.packets import PacketIndex

    if trace.index is None:
        trace.index = PacketIndex(packets(ctx, label))
    found = trace.index.find(data)
    problem = trace.packet_error or (
        "" if found else f"no packet of trace {label} matches this record (id, then version)"
    )
    return TraceEvidence(label, trace.tip, found, problem)


def reachable(ctx: GateContext, label: str) -> set[str]:
    """The commits reachable from the trace's tip (empty when it is missing)."""
    trace = _trace(ctx, label)
    if trace.reachable is None:
        trace.reachable = set(source(ctx).commits(label)) if trace.tip else set()
    return trace.reachable


def first_mined(
    ctx: GateContext, wanted: Callable[[dict], bool] | None = None
) -> RecordFile | None:
    """The first mined record (sorted by path) that ``wanted(data)`` accepts, for
    injection cases; None when there is none."""
    for record_file in sorted(ctx.records, key=lambda f: f.path):
        data = record_file.data
        if data is not None and is_mined(data) and (wanted is None or wanted(data)):
            return record_file
    return None


def packet_of(ctx: GateContext, data: dict) -> Packet | None:
    """The packet this context's evidence holds for ``data`` (for injection cases)."""
    if source(ctx) is None or not is_mined(data):
        return None
    return evidence(ctx, data).packet


def packet_of_record(
    locate: Callable[[GateContext], RecordFile | None],
) -> Callable[[GateContext], Packet | None]:
    """A ``mutation`` locator: the packet of the record ``locate`` finds (for injection
    cases that damage the evidence rather than the record)."""

    def packet(ctx: GateContext) -> Packet | None:
        record_file = locate(ctx)
        return packet_of(ctx, record_file.data) if record_file is not None else None

    return packet
