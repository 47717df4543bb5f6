"""What the index cache keeps of one record file: its ``records`` row (the columns
readers select on, and the GPU-wiki index entry), the names it files code under and
the architectures it lists."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from typing import NamedTuple

from gitkb import record as rec
from gitkb.record.curation import CODE_TYPES, CurationFacts, curation_facts, speedup
from gitkb.record.index import index_entry
from gitkb.record.values import json_number, string_or_none

# The types whose canonical technique the cache derives: the levers, and the cards.
TECHNIQUE_TYPES = ("strategy", "anti-strategy", "technique-card")

# What curation ranks a code record by (``CurationFacts``, in its field order; the
# ranking's ``speedup`` is another rule's), so resolve reads no record to choose.
CURATION_COLUMNS = ("code", "code_speedup", "bench_key", "direction", "reproductions", "exp_id",
                    "geak_gfx", "geak_kernel", "rocm")  # fmt: skip
COLUMNS = (
    "path, blob, id, type, status, episode_key, vendor, arch, dsl, family, product, measured, "
    "language, signature, source, entry, error, "
    # what ranking reads, kept beside the entry so a broad query decodes no entry
    "level, tier, worth, gain, speedup, search_text, architectures, operators, symptoms, "
    "bottleneck, tags, "
    # the canonical technique, derived here under the vocabulary's version (file.py)
    "technique, techniques, " + ", ".join(CURATION_COLUMNS)
)
# The entry is kept in a table of its own (``entries``, by path): a scan of the ranking
# columns then reads rows of about a kilobyte, not three.
ENTRY_AT = COLUMNS.split(", ").index("entry")
# Where the derived technique columns sit in a row of ``COLUMNS``.
TECHNIQUE_AT = COLUMNS.split(", ").index("technique")
RECORD_COLUMNS = ", ".join(c for c in COLUMNS.split(", ") if c != "entry")
RECORD_WIDTH = RECORD_COLUMNS.count(",") + 1


class Row(NamedTuple):
    """One record file as the cache knows it; ``entry`` is None when it does not parse. (The
    cache's result rows are NamedTuples, as the sqlite3 module's docs suggest: made by the
    hundred, read by name.)"""

    path: str
    blob: str
    id: str | None
    entry: dict | None
    error: str | None
    source: str | None = None  # evidence.raw.source_repo: the trace it was mined from


class KernelRow(NamedTuple):
    """What warm start reads of a record filed under a kernel name, without decoding its
    entry: ``product`` is the scope's, ``measured`` the GPU ``evidence.summary.measured_on``
    names, ``language`` the record's (``gitkb.record.language_of``)."""

    id: str | None
    type: str | None
    status: str | None
    vendor: str | None
    arch: str | None
    dsl: str | None
    path: str
    blob: str
    product: str | None
    measured: str | None
    language: str | None
    curation: CurationFacts | None = None  # a code record's; None for any other row


_OWN = KernelRow._fields[:-1]
# The columns a KernelRow is read from: its own, then its CurationFacts'.
KERNEL_COLUMNS = (*_OWN, *CURATION_COLUMNS)
# Where each of them sits in a row of ``COLUMNS`` (the kernels table repeats them).
_KERNEL_AT = tuple(COLUMNS.split(", ").index(column) for column in KERNEL_COLUMNS)
_NO_CURATION = (None,) * len(CURATION_COLUMNS)
_REPRODUCTIONS = tuple(f.name for f in fields(CurationFacts)).index("reproductions")


def kernel_row(values: tuple) -> KernelRow:
    """The KernelRow of a row of ``KERNEL_COLUMNS`` (positional: a kernel's rows are many)."""
    own, held = values[: len(_OWN)], values[len(_OWN) :]
    facts = None
    if held[_REPRODUCTIONS] is not None:  # never NULL for a code record's facts
        held = (*held[:_REPRODUCTIONS], int(held[_REPRODUCTIONS]), *held[_REPRODUCTIONS + 1 :])
        facts = CurationFacts(*held)
    return KernelRow(*(*own, facts))


def kernel_entries(values: tuple, names: list[str]) -> list[tuple]:
    """The kernels table's rows of one record (``values``, a row of ``COLUMNS``): its
    ``KERNEL_COLUMNS`` under each name it files code under, once each."""
    held = tuple(values[at] for at in _KERNEL_AT)
    return [(name, *held) for name in dict.fromkeys(names)]


def _curation(data: dict) -> tuple:
    """The curation columns of a record: a code record's facts, NULL for any other."""
    if data.get("type") not in CODE_TYPES:
        return _NO_CURATION
    facts = curation_facts(data)
    # REAL, not INTEGER: a count read from a JSON number can pass SQLite's 64 bits (it is
    # an integral float, so REAL holds it exactly).
    return (facts.code, facts.speedup, facts.bench_key, facts.direction,
            float(facts.reproductions), facts.exp_id, facts.geak_gfx, facts.geak_kernel,
            facts.rocm)  # fmt: skip


def kernel_names(record: dict) -> list[str]:
    """The names a record files code under: its scope's operators, else its family."""
    scope = rec.scope_of(record)
    listed = scope.get("operators") if isinstance(scope.get("operators"), list) else []
    names = [o for o in listed if isinstance(o, str) and o.strip()]
    family = scope.get("operator_family")
    return names or ([family] if isinstance(family, str) and family.strip() else [])


def record_arches(record: dict) -> list[str]:
    """The architectures a record's scope lists besides its ``arch`` (which the records
    table holds, indexed with the vendor)."""
    scope = rec.scope_of(record)
    listed = scope.get("architectures") if isinstance(scope.get("architectures"), list) else []
    return sorted({a for a in listed if isinstance(a, str) and a and a != scope.get("arch")})


def _strings(value: object) -> str | None:
    """The strings of a JSON list, as JSON text (decoded only by a query that filters on
    them); None when there are none."""
    if not isinstance(value, list):
        return None
    found = [v for v in value if isinstance(v, str)]
    return json.dumps(found, ensure_ascii=False, check_circular=False) if found else None


def _ranking(entry: dict, record: dict) -> tuple:
    """The entry fields ranking reads, each as the one type ranking compares it as; the
    speedup ``--min-speedup`` floors is the entry's, else the record's measured one
    (``curation.speedup``: kept here so a floor reads no record)."""
    retrieval = entry.get("retrieval") if isinstance(entry.get("retrieval"), dict) else {}
    scope = retrieval.get("scope") if isinstance(retrieval.get("scope"), dict) else {}
    signals = retrieval.get("signals") if isinstance(retrieval.get("signals"), dict) else {}
    return (
        string_or_none(entry.get("level")),
        string_or_none(entry.get("tier")),
        json_number(entry.get("worth_score")),
        json_number(entry.get("gain_pct")),
        _floored_speedup(entry, record),
        string_or_none(entry.get("search_text")) or "",
        _strings(scope.get("architectures")),
        _strings(scope.get("operators")),
        _strings(signals.get("symptoms")),
        string_or_none(signals.get("bottleneck")),
        _strings(retrieval.get("technique_tags")),  # listed only (``--list-tags``)
    )


def _technique(record: dict) -> tuple[str | None, str | None]:
    """A record's canonical technique key (NULL when uncategorized, or for a type that
    names none) and the names a ``--technique`` filter finds it by, as JSON text."""
    if record.get("type") not in TECHNIQUE_TYPES:
        return None, None
    # Here, not at the top: a read verb imports this module but indexes nothing, and the
    # vocabulary's modules compile their patterns on import (a heavy module: house rules).
    from gitkb.trace.techniques import record_technique

    detection = record_technique(record)
    if not detection.categorized:
        return None, None
    return detection.key, _strings(detection.components())


def without_techniques(values: tuple) -> tuple:
    """A row of ``COLUMNS`` with its technique columns NULL: what a read verb's open-time
    sample compares (deriving them would parse the vocabulary on every open; ``validate
    --full`` compares every column with a fresh rebuild)."""
    return (*values[:TECHNIQUE_AT], None, None, *values[TECHNIQUE_AT + 2 :])


def _floored_speedup(entry: dict, record: dict) -> float | None:
    stated = json_number(entry.get("speedup_x"))
    if stated is None or math.isnan(stated):  # a NaN column reads back as NULL: none stated
        return speedup(record)
    return stated


# A record file's ``records`` row, kernel names and architectures (``row_values``).
RowValues = tuple[tuple, list[str], list[str]]


def row_values(
    path: str, blob: str, raw: bytes | None, data: dict | None = None, techniques: bool = True
) -> RowValues:
    """The ``records`` row of one record file, its kernel names and its architectures
    (``data``: the record as already parsed from ``raw``; without ``techniques``, the
    technique columns are left NULL: ``without_techniques``)."""
    if raw is None:
        loaded = rec.RecordFile(path, b"", None, f"its object {blob} cannot be read")
    elif data is not None:
        loaded = rec.RecordFile(path, raw, data)
    else:
        loaded = rec.load(path, raw)
    data = loaded.data
    if data is None:
        # Filed under its family's folder all the same, so a reader of that kernel sees
        # (and counts) the broken record.
        parts = path.split("/")
        kernels = parts[5:6] if len(parts) == 7 else []
        values = (path, blob, *([None] * 14), loaded.error, *([None] * 13), *_NO_CURATION)
        return values, kernels, []
    scope = rec.scope_of(data)
    entry = index_entry(data, path)
    values = (
        path,
        blob,
        string_or_none(data.get("id")),
        string_or_none(data.get("type")),
        string_or_none(data.get("status")),
        string_or_none(data.get("episode_key")),
        string_or_none(scope.get("vendor")),
        string_or_none(scope.get("arch")),
        string_or_none(scope.get("dsl")),
        string_or_none(scope.get("operator_family")),
        string_or_none(scope.get("product")),
        string_or_none(rec.dig(data, "evidence", "summary", "measured_on", "gpu")),
        rec.language_of(data),
        entry["content_signature"],
        string_or_none(rec.dig(data, "evidence", "raw", "source_repo")),
        json.dumps(entry, ensure_ascii=False, check_circular=False),  # parsed JSON: no cycles
        None,
        *_ranking(entry, data),
        *(_technique(data) if techniques else (None, None)),
        *_curation(data),
    )
    return values, kernel_names(data), record_arches(data)
