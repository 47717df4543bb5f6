"""Trace gate `ncu-attribution`: a bottleneck claimed on profiler evidence cites a usable
capture: one of the packet's cited profile directories measured the kernel under test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitkb.gates import Finding, Gate, GateContext
from gitkb.gates import trace_evidence as te

if TYPE_CHECKING:
    from gitkb.record import RecordFile
    from gitkb.trace.packets import Packet

NAME = "ncu-attribution"
FIELD = "evidence.summary.bottleneck_evidence.basis"


def basis(data: dict) -> object:
    summary = (data.get("evidence") or {}).get("summary") or {}
    claim = summary.get("bottleneck_evidence") if isinstance(summary, dict) else None
    return claim.get("basis") if isinstance(claim, dict) else None


def check(ctx: GateContext) -> Iterator[Finding]:
    records = te.mined_records(ctx)
    te.require_traces(ctx)
    for record_file, data in records:
        if basis(data) != "profiler":
            continue
        found = te.evidence(ctx, data)
        packet = found.packet
        if packet is None:
            yield Finding(record_file.id, NAME, f"basis is profiler, but {found.problem}", FIELD)
            continue
        cited = [d for d in packet.provenance.get("ncu_dirs") or [] if isinstance(d, str)]
        if not set(cited) & set(packet.usable_captures):
            what = (
                f"cites {len(cited)} capture{'s' if len(cited) != 1 else ''}, none usable"
                if cited
                else "the packet cites no capture"
            )
            yield Finding(
                record_file.id,
                NAME,
                f"basis is profiler, but {what} (none measured the kernel under test)",
                FIELD,
            )


def _claim_profiler(ctx: GateContext) -> RecordFile | None:
    record_file = te.first_mined(ctx)
    if record_file is None:
        return None
    summary = record_file.data["evidence"].setdefault("summary", {})
    claim = summary.setdefault("bottleneck_evidence", {})
    claim["basis"] = "profiler"
    return record_file


GATE = Gate(
    NAME, "trace", "a profiler-based bottleneck cites a usable capture of the kernel", check
)


@GATE.edit("unbacked-claim", te.packet_of_record(_claim_profiler))
def _unbacked_claim(packet: Packet) -> None:
    packet.provenance["ncu_dirs"] = []


@GATE.edit("unusable-capture", te.packet_of_record(_claim_profiler))
def _unusable_capture(packet: Packet) -> None:
    """Captures are cited, but none measured the kernel under test."""
    packet.provenance["ncu_dirs"] = packet.provenance.get("ncu_dirs") or ["profiles/v1"]
    packet.usable_captures = []


@GATE.edit("no-packet", _claim_profiler)
def _no_packet(record_file: RecordFile) -> None:
    record_file.data["id"] += "-unmined"
    record_file.data["evidence"]["raw"]["version"] = "v9999"
