"""Distillation: one packet in, at most one record out (TRACE_FORMAT §7).

``builtin`` copies what the packet states verbatim; ``external`` runs an agent command per
packet. Both return a ``Distilled``: the record (or None) and what the packet was too
thin to fill.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Distilled:
    """A record (or None) and what the packet was too thin to fill."""

    seg_id: str
    record: dict | None
    missing: list[str] = field(default_factory=list)
    skipped: str = ""  # why no record was written
    distiller: str = "builtin"
