"""What a distiller returns (``Distilled``) and what an in-process distiller module holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from gitkb.trace.packets import Packet


@dataclass
class Distilled:
    """A record (or None) and what the packet was too thin to fill."""

    seg_id: str
    record: dict | None
    missing: list[str] = field(default_factory=list)
    skipped: str = ""  # why no record was written
    distiller: str = "builtin"


@runtime_checkable
class DistillerModule(Protocol):
    """What a module named in ``REGISTRY`` holds (tests/test_plugins.py checks each)."""

    def distill(self, packet: Packet) -> Distilled: ...
