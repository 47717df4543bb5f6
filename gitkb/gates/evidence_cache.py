"""What one gate context's trace gates share (``GateContext.evidence_cache``): each
trace's tip and packets, built once per context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # type-only: importing it loads dulwich
    from gitkb.trace.packets import Packet, PacketIndex


@dataclass
class TraceEntry:
    """One trace as the trace gates read it: its tip (or why none), its packets, once."""

    tip: str | None
    problem: str = ""
    packets: list[Packet] | None = None
    packet_error: str = ""
    reachable: set[str] | None = None
    index: PacketIndex | None = None  # of ``packets``


@dataclass
class EvidenceCache:
    """What one context's trace gates share: each trace's tip and packets, once."""

    traces: dict[str, TraceEntry] = field(default_factory=dict)
