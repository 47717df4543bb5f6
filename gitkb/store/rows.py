"""What the index cache keeps of one record file: its ``records`` row (the columns
readers select on, and the GPU-wiki index entry), the names it files code under and
the architectures it lists."""

from __future__ import annotations

import json

from gitkb import record as rec
from gitkb.record.index import index_entry
from gitkb.record.values import json_number, string_or_none
from gitkb.valueclass import fields_of, value_class

COLUMNS = (
    "path, blob, id, type, status, episode_key, vendor, arch, dsl, family, product, measured, "
    "language, signature, source, entry, error, "
    # what ranking reads, kept beside the entry so a broad query decodes no entry
    "level, tier, worth, gain, speedup, search_text, architectures, operators, symptoms, "
    "bottleneck"
)
WIDTH = COLUMNS.count(",") + 1


@value_class(frozen=True)
class Row:
    """One record file as the cache knows it; ``entry`` is None when it does not parse."""

    path: str
    blob: str
    id: str | None
    entry: dict | None
    error: str | None
    source: str | None = None  # evidence.raw.source_repo: the trace it was mined from


@value_class(frozen=True)
class KernelRow:
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


KERNEL_COLUMNS = fields_of(KernelRow)


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


def _ranking(entry: dict) -> tuple:
    """The entry fields ranking reads, each as the one type ranking compares it as."""
    retrieval = entry.get("retrieval") if isinstance(entry.get("retrieval"), dict) else {}
    scope = retrieval.get("scope") if isinstance(retrieval.get("scope"), dict) else {}
    signals = retrieval.get("signals") if isinstance(retrieval.get("signals"), dict) else {}
    return (
        string_or_none(entry.get("level")),
        string_or_none(entry.get("tier")),
        json_number(entry.get("worth_score")),
        json_number(entry.get("gain_pct")),
        json_number(entry.get("speedup_x")),
        string_or_none(entry.get("search_text")) or "",
        _strings(scope.get("architectures")),
        _strings(scope.get("operators")),
        _strings(signals.get("symptoms")),
        string_or_none(signals.get("bottleneck")),
    )


# A record file's ``records`` row, kernel names and architectures (``row_values``).
RowValues = tuple[tuple, list[str], list[str]]


def row_values(path: str, blob: str, raw: bytes | None, data: dict | None = None) -> RowValues:
    """The ``records`` row of one record file, its kernel names and its architectures
    (``data``: the record as already parsed from ``raw``)."""
    if raw is None:
        loaded = rec.RecordFile(path, b"", None, "missing object")
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
        return (path, blob, *([None] * 14), loaded.error, *([None] * 10)), kernels, []
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
        *_ranking(entry),
    )
    return values, kernel_names(data), record_arches(data)
