"""Candidate providers: where the loop's candidate kernels come from.

One file per provider, each defining a ``Provider`` subclass named ``Provider``;
``REGISTRY`` maps the provider's command-line name to its module (one line each).
A provider gets a ``ProposalContext`` (the current best and what was learned so
far) and returns one ``Candidate``, or None when it has nothing left to propose.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from gitkb.errors import GitkbError

REGISTRY: dict[str, str] = {
    "knobs": "gitkb.optimize.providers.knobs",
    "command": "gitkb.optimize.providers.command",
    "codex": "gitkb.optimize.providers.codex",
    "claude": "gitkb.optimize.providers.claude",
    "replay": "gitkb.optimize.providers.replay",
    "mock": "gitkb.optimize.providers.mock",
    "warm-start": "gitkb.optimize.providers.warmstart",  # --warm-start, not --provider
}

METADATA_FIELDS = (
    "hypothesis",
    "evidence",
    "change",
    "expected_effect",
    "risk",
    "commit_title",
    "commit_summary",
)


@dataclass
class Candidate:
    """A proposed kernel source and what its author says about it."""

    source: str | None  # None: the provider failed to produce one (``error`` says why)
    hypothesis: str = ""
    change: str = ""
    evidence: str = ""
    expected_effect: str = ""
    risk: str = ""
    commit_title: str = ""
    commit_summary: str = ""
    error: str | None = None
    provider: str | None = None  # set when not the run's --provider (the warm start)
    cited: list[str] = field(default_factory=list)  # knowledge-base records it drew on
    excluded_by: list[str] = field(default_factory=list)  # records that ruled settings out

    def metadata(self) -> dict:
        return {name: getattr(self, name) for name in METADATA_FIELDS}


@dataclass
class ProposalContext:
    """What a provider may know when proposing experiment ``experiment_id``."""

    experiment_id: str
    best_source: str
    baseline_source: str
    best_id: str
    target: dict
    cases: list[dict]
    best_cases: list[dict]  # per-case median, p95, cv, speedup of the current best
    best_profile: dict
    exclusions: list[dict] = field(default_factory=list)  # the last rejections
    workspace: Path | None = None  # a fresh folder the provider may use
    references: Path | None = None  # the knowledge base's prose for this kernel (warm start)
    knowledge: list[dict] = field(default_factory=list)  # the store's answer (--kb, brief)
    kb_context: str = ""  # the store's TLX knowledge documents, joined as TLX joins them
    # Source keys of the code the run already measured (warm-start candidates included):
    # proposing one again would lose the slot to the duplicate check.
    seen: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ProviderOptions:
    agent_command: str | None = None
    agent_bin: str | None = None
    replay_dir: str | None = None
    agent_timeout_s: float = 1800.0
    model: str | None = None  # --model: the model an agent CLI uses
    kb: str | None = None  # the knowledge base a warm start reads (--kb)


class Provider:
    """Base class: ``propose`` returns a Candidate, or None when nothing is left."""

    name = ""

    def __init__(self, options: ProviderOptions, tunables: dict[str, list]) -> None:
        self.options = options
        self.tunables = tunables

    def propose(self, context: ProposalContext) -> Candidate | None:
        raise NotImplementedError


@runtime_checkable
class ProviderModule(Protocol):
    """What a module named in ``REGISTRY`` holds (tests/unit/test_plugins.py checks each): its
    ``Provider``, a subclass of the base class above."""

    Provider: type[Provider]


def load(name: str, options: ProviderOptions, tunables: dict[str, list]) -> Provider:
    if name not in REGISTRY:
        known = ", ".join(REGISTRY)
        raise GitkbError(f"unknown provider {name!r}; known providers: {known} (--provider)")
    module = importlib.import_module(REGISTRY[name])
    return module.Provider(options, tunables)
