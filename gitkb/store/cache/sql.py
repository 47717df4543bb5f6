"""SQL fragments the cache's read queries share (``gitkb.store.cache.queries``,
``gitkb.store.cache.vocabulary``): each a condition over a ``records`` row, with its
parameters."""

from __future__ import annotations

import json


def marks(values: tuple) -> str:
    """One ``?`` placeholder for each of ``values``, comma-separated."""
    return ", ".join("?" * len(values))


def own_arch(vendors: tuple[str, ...], arch: str) -> tuple[str, tuple]:
    """ "The record's arch is ``arch``", spelled so the (vendor, arch) index answers."""
    any_vendor = (
        f"(vendor IN ({marks(vendors)}) OR vendor IS NULL)" if vendors else ("vendor IS NULL")
    )
    return f"({any_vendor} AND arch = ?)", (*vendors, arch)


def list_holds(column: str, value: str) -> tuple[str, tuple]:
    """SQL for "the list column holds ``value``": its JSON text holding the quoted string
    first (cheap, and necessary: ``rows._strings`` wrote it so), then its elements."""
    quoted = json.dumps(value, ensure_ascii=False)
    sql = f"(instr({column}, ?) > 0 AND EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?))"
    return sql, (quoted, value)


def holds_signal(symptom: str) -> tuple[str, tuple]:
    """SQL for "the record holds ``symptom`` as a recorded signal": its bottleneck, or one
    of its symptoms."""
    listed, params = list_holds("symptoms", symptom)
    return f"(bottleneck = ? OR {listed})", (symptom, *params)
