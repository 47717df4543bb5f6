"""The gate registry's shared interface: a gate is a named check over a context.

Every gate module defines ``GATE = Gate(...)`` with its check, then declares at least
three injection cases beside the mutations that make them (``Gate.case``, ``Gate.edit``,
``Gate.add``): mutations of a valid context that the gate must report.
The order and membership of gates live in ``registry.py``, one line per gate.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from gitkb.gates.evidence_cache import EvidenceCache
from gitkb.record import RecordFile
from gitkb.util.attributes import attributes

if TYPE_CHECKING:
    # Types only: gates sit below the store and the trace readers that implement these.
    from gitkb.store.cache.rows import Row
    from gitkb.trace.packets import Packet
    from gitkb.vcs.repository import Repository


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
        return attributes(self, "record=record_id gate field message")


class StoreReader(Protocol):
    """What gates read of a store (``gitkb.store.view.StoreView`` is one): the commit
    judged against, its repository, its ids and the records behind them."""

    tip: str | None

    @property
    def repo(self) -> Repository: ...
    def ids(self) -> list[str]: ...
    def rows_of(self, record_id: str) -> list[Row]: ...
    def read_record(self, record_id: str) -> RecordFile: ...
    def read_file(self, path: str) -> bytes | None: ...


class TraceSource(Protocol):
    """Where trace gates find traces (``gitkb.trace.sources``: a store's copies under
    refs/kb/traces/<label>, or one trace folder)."""

    def tip(self, label: str) -> tuple[str | None, str]: ...
    def repo(self, label: str) -> Repository: ...
    def packets(self, label: str) -> list[Packet]: ...
    def commits(self, label: str) -> set[str] | frozenset[str]: ...


@dataclass
class GateContext:
    """What a gate looks at: record files, the index bytes, and the options of the run.

    ``store`` is the store the records are judged against (None for a bare folder).
    ``traces`` is where trace gates find traces: None means the store's copies.
    """

    records: list[RecordFile]
    index_raw: bytes | None = None
    full: bool = False
    store: StoreReader | None = None
    traces: TraceSource | None = None
    # The action the records are being admitted as ("insert", "confirm", ..., "push" in
    # the server hook); None judges a standing store, where a record meets itself.
    admission: str | None = None
    # The trace being mined: a mined record's source_repo must name it.
    trace_label: str | None = None
    # An injection case mutates packets: it gets its own copy, never the shared one.
    mutable_evidence: bool = False
    # The trace gates' packets and tips, built once per context (gates.trace_evidence).
    evidence_cache: EvidenceCache | None = None
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
Mutate = TypeVar("Mutate", bound=Callable[[GateContext], bool])
Edit = Callable[[Target], object]


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


def first_of_type(record_type: str) -> Callable[[GateContext], dict | None]:
    """An injection case's ``locate``: the first parsed record of ``record_type``."""

    def locate(ctx: GateContext) -> dict | None:
        return next((data for _, data in ctx.parsed() if data.get("type") == record_type), None)

    return locate


def setting(
    locate: Callable[[GateContext], dict | None], key: str, value: object
) -> Callable[[GateContext], bool]:
    """An injection case's ``mutate`` that sets ``key`` to ``value`` in the object
    ``locate`` finds (``mutation``)."""

    def edit(found: dict) -> None:
        found[key] = value

    return mutation(locate, edit)


@dataclass(frozen=True)
class Gate:
    name: str
    family: str  # "store" or "trace"
    description: str
    check: Callable[[GateContext], Iterable[Finding]]
    record_level: bool = True  # runs on single records at admission and in the pre-commit hook
    full_only: bool = False
    # Reads nothing of its context but the records: a bulk admission may run it in a
    # worker process, ahead of the writer (``gitkb.store.screening``).
    alone: bool = False
    # Filled by the module as it declares its cases, in that order (``add``).
    _cases: list[Injection] = field(default_factory=list, compare=False, repr=False)

    @property
    def injections(self) -> tuple[Injection, ...]:
        return tuple(self._cases)

    def add(self, case: str, mutate: Callable[[GateContext], bool]) -> None:
        """Declare the injection case ``<gate>/<case>``."""
        self._cases.append(Injection(f"{self.name}/{case}", mutate))

    def case(self, case: str) -> Callable[[Mutate], Mutate]:
        """Decorator: the function mutates a context for the case ``<gate>/<case>``."""

        def declare(mutate: Mutate) -> Mutate:
            self.add(case, mutate)
            return mutate

        return declare

    def edit(
        self, case: str, locate: Callable[[GateContext], Target | None]
    ) -> Callable[[Edit[Target]], Edit[Target]]:
        """Decorator: the function damages what ``locate`` finds, for the case
        ``<gate>/<case>`` (``mutation``)."""

        def declare(edit: Edit[Target]) -> Edit[Target]:
            self.add(case, mutation(locate, edit))
            return edit

        return declare

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
    """A context an injection case may mutate: its own records and evidence, the same
    store, traces and index check."""
    return dataclasses.replace(
        sample,
        records=copy.deepcopy(sample.records),
        full=True,
        mutable_evidence=True,
        evidence_cache=None,
    )
