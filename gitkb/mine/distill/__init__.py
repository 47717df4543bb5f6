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


@dataclass
class Attempt:
    """One packet's distillation and what the gates found in its record."""

    packet: object  # gitkb.trace.packets.Packet
    result: Distilled
    findings: list = field(default_factory=list)  # gitkb.gates.Finding
    retried: bool = False


def distill_all(packets, distiller: str = "builtin", jobs: int = 1, progress=None, check=None):
    """Every packet distilled, in order. ``check(records)`` gives each record's gate
    findings (None: the gates run later, at admission); an external distiller whose
    record the gates refuse gets the findings back for one more try."""
    from gitkb.mine.distill.builtin import distill

    total, finished = len(packets), [0]

    def tick() -> None:
        finished[0] += 1
        if progress is not None:
            progress(finished[0], total)

    if distiller == "builtin":
        results = []
        for packet in packets:
            results.append(distill(packet))
            tick()
    else:
        # Only here: it brings the subprocess runner and a thread pool.
        from gitkb.mine.distill.external import run_all

        results = run_all(distiller, packets, jobs, done=tick)
    attempts = [Attempt(p, r) for p, r in zip(packets, results, strict=True)]
    _judge(attempts, check)
    refused = [a for a in attempts if a.findings] if distiller != "builtin" else []
    if refused:
        feedback = [
            {"record": a.result.record, "findings": [f.line() for f in a.findings]} for a in refused
        ]
        again = run_all(distiller, [a.packet for a in refused], jobs, feedback)
        for attempt, result in zip(refused, again, strict=True):
            attempt.result, attempt.retried, attempt.findings = result, True, []
        _judge(refused, check)
    return attempts


def _judge(attempts: list[Attempt], check) -> None:
    if check is None:
        return
    judged = [a for a in attempts if a.result.record is not None]
    for attempt, findings in zip(judged, check([a.result.record for a in judged]), strict=True):
        attempt.findings = findings
