"""The ordered list of gates: one line per gate, store gates first, then trace gates."""

from __future__ import annotations

import importlib
from functools import cache

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
    "profile",
    "layout",
    "verbatim",
    "no_fabrication",
    "provenance",
    "ncu_attribution",
    "store_overlap",
    "journal_provenance",
)


@cache
def all_gates() -> tuple[Gate, ...]:
    return tuple(importlib.import_module(f"gitkb.gates.{m}").GATE for m in GATE_MODULES)


def by_name(names: list[str] | tuple[str, ...] | None = None) -> tuple[Gate, ...]:
    """The gates named (all when None), in registry order; an unknown name is an error."""
    from gitkb.errors import GitkbError

    gates = all_gates()
    if not names:
        return gates
    known = {g.name for g in gates}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise GitkbError(f"unknown gate {', '.join(unknown)}; known: {', '.join(sorted(known))}", 2)
    return tuple(g for g in gates if g.name in names)


def record_level() -> tuple[Gate, ...]:
    """The gates that judge one record alone: run at admission and by the pre-commit hook."""
    return tuple(g for g in all_gates() if g.record_level)
