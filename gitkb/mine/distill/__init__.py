"""Distillation: one packet in, at most one record out (docs/trace-format.md §7).

``--distiller`` names an in-process distiller of ``REGISTRY`` (``builtin`` copies what
the packet states verbatim), or else is an agent command that ``external`` runs per
packet. Both return a ``Distilled``: the record (or None) and what the packet was too
thin to fill.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitkb.mine.distill.distilled import Distilled, DistillerModule
from gitkb.trace.techniques import tag_record

if TYPE_CHECKING:
    from gitkb.gates import Finding
    from gitkb.trace.packets import Packet

__all__ = ["REGISTRY", "Attempt", "Distilled", "DistillerModule", "distill_all", "in_process"]

# The in-process distillers by the name --distiller takes, one line each, each module
# holding what ``DistillerModule`` says; any other name is an agent command.
REGISTRY: dict[str, str] = {
    "builtin": "gitkb.mine.distill.builtin",
}


def in_process(distiller: str) -> bool:
    """Whether ``distiller`` names a registered module (its records go straight to the
    gates at admission) rather than an agent command (checked first, for a retry)."""
    return distiller in REGISTRY


@dataclass
class Attempt:
    """One packet's distillation and what the gates found in its record."""

    packet: Packet
    result: Distilled
    findings: list[Finding] = field(default_factory=list)
    retried: bool = False


def distill_all(
    packets: list[Packet],
    distiller: str = "builtin",
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    check: Callable[[list[dict]], list[list[Finding]]] | None = None,
) -> list[Attempt]:
    """Every packet distilled, in order. ``check(records)`` gives each record's gate
    findings (None: the gates run later, at admission); an external distiller whose
    record the gates refuse gets the findings back for one more try."""
    total, finished = len(packets), [0]

    def tick() -> None:
        finished[0] += 1
        if progress is not None:
            progress(finished[0], total)

    if in_process(distiller):
        module: DistillerModule = importlib.import_module(REGISTRY[distiller])
        results = []
        for packet in packets:
            results.append(module.distill(packet))
            tick()
    else:
        # Only here: it brings the subprocess runner and a thread pool.
        from gitkb.mine.distill.external import run_all

        results = run_all(distiller, packets, jobs, done=tick)
    _tag(results)
    attempts = [Attempt(p, r) for p, r in zip(packets, results, strict=True)]
    _judge(attempts, check)
    refused = [a for a in attempts if a.findings] if not in_process(distiller) else []
    if refused:
        feedback = [
            {"record": a.result.record, "findings": [f.line() for f in a.findings]} for a in refused
        ]
        again = run_all(distiller, [a.packet for a in refused], jobs, feedback)
        _tag(again)
        for attempt, result in zip(refused, again, strict=True):
            attempt.result, attempt.retried, attempt.findings = result, True, []
        _judge(refused, check)
    return attempts


def _tag(results: list[Distilled]) -> None:
    """Each record's canonical technique first in its technique tags (the vocabulary's
    name for what its own diff or sentence shows), whichever distiller wrote it."""
    for result in results:
        if result.record is not None:
            tag_record(result.record)


def _judge(
    attempts: list[Attempt], check: Callable[[list[dict]], list[list[Finding]]] | None
) -> None:
    if check is None:
        return
    judged = [a for a in attempts if a.result.record is not None]
    for attempt, findings in zip(judged, check([a.result.record for a in judged]), strict=True):
        attempt.findings = findings
