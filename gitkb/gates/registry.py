"""The ordered list of gates: one line per gate, store gates first (GPU-wiki's nine, then
gitkb's technique-card and technique-claim gates), then trace gates."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Protocol, runtime_checkable

from gitkb.errors import GitkbError
from gitkb.gates import Gate

GATE_MODULES = (
    "schema",
    "ids",
    "anonymization",
    "raw_isolation",
    "relations",
    "index",
    "self_contained",
    "no_cross_reference",
    "established_fact",
    "technique_card",
    "technique_claim",
    "profile",
    "layout",
    "verbatim",
    "no_fabrication",
    "provenance",
    "ncu_attribution",
    "store_overlap",
    "journal_provenance",
)


@runtime_checkable
class GateModule(Protocol):
    """What a module named in ``GATE_MODULES`` holds (tests/unit/test_plugins.py checks each)."""

    GATE: Gate


# A gate's name is its module's with hyphens (a test holds every module to it), so names
# are checked without importing nineteen modules.
GATE_NAMES = tuple(module.replace("_", "-") for module in GATE_MODULES)


def checked_names(names: list[str] | tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The gate names asked for (all when None), in registry order; an unknown one is an
    error."""
    if not names:
        return GATE_NAMES
    unknown = [n for n in names if n not in GATE_NAMES]
    if unknown:
        known = ", ".join(sorted(GATE_NAMES))
        raise GitkbError(f"unknown gate {', '.join(unknown)}; known: {known}", 2)
    return tuple(n for n in GATE_NAMES if n in names)


@cache
def all_gates() -> tuple[Gate, ...]:
    return tuple(importlib.import_module(f"gitkb.gates.{m}").GATE for m in GATE_MODULES)


def by_name(names: list[str] | tuple[str, ...] | None = None) -> tuple[Gate, ...]:
    """The gates named (all when None), in registry order; an unknown name is an error."""
    wanted = checked_names(names)
    return tuple(g for g in all_gates() if g.name in wanted)


def record_level() -> tuple[Gate, ...]:
    """The gates that judge one record alone: run at admission and by the pre-commit hook."""
    return tuple(g for g in all_gates() if g.record_level)
