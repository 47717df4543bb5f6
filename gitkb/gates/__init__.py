"""The gate registry's shared interface: a gate is a named check over a context.

Every gate module defines ``GATE = Gate(...)`` with its check and at least
three injection cases: mutations of a valid context that the gate must report.
The order and membership of gates live in ``registry.py``, one line per gate.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from gitkb.record import RecordFile


@dataclass(frozen=True)
class Finding:
    record_id: str
    gate: str
    message: str
    field: str = ""

    def line(self) -> str:
        where = f"{self.field}: " if self.field else ""
        return f"{self.record_id}: {self.gate}: {where}{self.message}"

    def as_json(self) -> dict:
        return {
            "record": self.record_id,
            "gate": self.gate,
            "field": self.field,
            "message": self.message,
        }


@dataclass
class GateContext:
    """What a gate looks at: record files, the index bytes, and the options of the run.

    ``store`` is a store view (or None for a bare folder). ``traces`` is where trace gates
    find traces (``gitkb.trace.sources``): None means the store's refs/kb/traces/<label>.
    """

    records: list[RecordFile]
    index_raw: bytes | None = None
    full: bool = False
    store: object | None = None
    traces: object | None = None
    extra: dict = field(default_factory=dict)
    # A gitkb store keeps its index as a cache, not a file: this compares that cache with
    # a fresh rebuild (the index gate calls it with --full).
    index_check: Callable[[], list[Finding]] | None = None

    def parsed(self) -> Iterable[tuple[RecordFile, dict]]:
        """The records that parsed as JSON objects (the schema gate reports the rest)."""
        for record_file in self.records:
            if record_file.data is not None:
                yield record_file, record_file.data


class Skip(Exception):
    """Raised by a gate check that cannot run here; the message is the reason."""


@dataclass(frozen=True)
class Injection:
    """A defect a gate must report: ``mutate`` changes a valid context in place and
    returns False when the context offers nothing to mutate."""

    name: str
    mutate: Callable[[GateContext], bool]


Target = TypeVar("Target")


def mutation(
    locate: Callable[[GateContext], Target | None], edit: Callable[[Target], object]
) -> Callable[[GateContext], bool]:
    """An injection case's ``mutate`` from its two halves: ``locate`` finds what to damage
    (None: the context offers nothing), ``edit`` damages it in place and returns False
    when, after all, there was nothing to change."""

    def mutate(ctx: GateContext) -> bool:
        target = locate(ctx)
        return target is not None and edit(target) is not False

    return mutate


@dataclass(frozen=True)
class Gate:
    name: str
    family: str  # "store" or "trace"
    description: str
    check: Callable[[GateContext], Iterable[Finding]]
    injections: tuple[Injection, ...]
    record_level: bool = True  # runs on single records at admission and in the pre-commit hook
    full_only: bool = False

    def run(self, ctx: GateContext) -> GateResult:
        if self.full_only and not ctx.full:
            return GateResult(self, "SKIP", "runs with --full only", [])
        try:
            findings = list(self.check(ctx))
        except Skip as skip:
            return GateResult(self, "SKIP", str(skip), [])
        return GateResult(self, "FAIL" if findings else "PASS", "", findings)


@dataclass
class GateResult:
    gate: Gate
    status: str
    reason: str
    findings: list[Finding]

    def line(self) -> str:
        text = f"{self.status:4}  {self.gate.name:20} {self.gate.description}"
        if self.reason:
            text += f" ({self.reason})"
        elif self.findings:
            text += f" ({len(self.findings)} finding{'s' if len(self.findings) != 1 else ''})"
        return text


def run_gates(ctx: GateContext, gates: Iterable[Gate]) -> list[GateResult]:
    return [gate.run(ctx) for gate in gates]


@dataclass(frozen=True)
class InjectionOutcome:
    gate: str
    case: str
    status: str  # FIRED, SILENT, SKIP, or CLEAN/NOISY for the unmutated baseline
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("FIRED", "CLEAN")


def run_injections(sample: GateContext, gates: Iterable[Gate]) -> list[InjectionOutcome]:
    """Run every gate on the valid sample (it must stay silent) and on each of its
    injection cases (it must fire)."""
    outcomes = []
    for gate in gates:
        baseline = gate.run(_fresh(sample))
        noisy = [f.line() for f in baseline.findings]
        outcomes.append(
            InjectionOutcome(
                gate.name, "(valid sample)", "NOISY" if noisy else "CLEAN", "; ".join(noisy[:3])
            )
        )
        for case in gate.injections:
            ctx = _fresh(sample)
            if not case.mutate(ctx):
                outcomes.append(InjectionOutcome(gate.name, case.name, "SKIP", "nothing to mutate"))
                continue
            result = gate.run(ctx)
            status = "FIRED" if result.findings else "SILENT"
            detail = result.findings[0].line() if result.findings else result.reason
            outcomes.append(InjectionOutcome(gate.name, case.name, status, detail))
    return outcomes


def _fresh(sample: GateContext) -> GateContext:
    store, index_check, traces = sample.store, sample.index_check, sample.traces
    sample.store = sample.index_check = sample.traces = None
    try:
        ctx = copy.deepcopy(sample)
    finally:
        sample.store, sample.index_check, sample.traces = store, index_check, traces
    ctx.store, ctx.index_check, ctx.traces = store, index_check, traces
    ctx.full = True
    ctx.extra["mutable_evidence"] = True  # see gates.trace_evidence
    return ctx
