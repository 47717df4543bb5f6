"""Record files: parsing, ids, scope -> path; ``index`` holds index entries and the index
file, ``signature`` the content signature of a record's code."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gitkb.errors import RecordError
from gitkb.record import strict
from gitkb.record.values import dig

SCHEMA_NAME = "clean-1.3"
_ID_FIRST = "abcdefghijklmnopqrstuvwxyz0123456789"
_ID_CHARS = _ID_FIRST + "._-"
MIN_ID_SEGMENTS = 5
RECORDS_DIR = "records"


@dataclass(slots=True)
class RecordFile:
    """One record file as read from a store commit or a folder.

    ``data`` is None when the bytes are not a JSON object; ``error`` then says why.
    """

    path: str
    raw: bytes
    data: dict | None = None
    error: str | None = None

    @property
    def id(self) -> str:
        if self.data is not None and isinstance(self.data.get("id"), str):
            return self.data["id"]
        return self.path.rsplit("/", 1)[-1].removesuffix(".json")


def load(path: str, raw: bytes) -> RecordFile:
    """Parse record bytes without raising (strict JSON: ``gitkb.record.strict``); a parse
    failure is kept on the result, so every reader skips and counts it."""
    if not raw.strip():
        return RecordFile(path, raw, None, "empty (a record is one JSON object)")

    try:
        data = strict.loads(raw)
    except strict.StrictError as exc:
        return RecordFile(path, raw, None, str(exc))
    if not isinstance(data, dict):
        return RecordFile(path, raw, None, f"a record is a JSON object, got {json_type(data)}")
    return RecordFile(path, raw, data)


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type (``object``, ``array``, ``null``, ...)."""
    if isinstance(value, bool):
        return "boolean"
    names = {dict: "object", list: "array", str: "string", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def parse(raw: bytes, source: str, max_bytes: int | None = None) -> dict:
    """Parse one record for admission; raise RecordError naming ``source`` when unusable
    (not strict JSON, or over ``max_bytes``)."""
    if max_bytes is not None and len(raw) > max_bytes:
        raise RecordError(
            f"{source}: {len(raw)} bytes, over the store's limit of {max_bytes} "
            "([store] max_record_bytes)"
        )
    loaded = load(source, raw)
    if loaded.data is None:
        raise RecordError(f"{source}: {loaded.error}")
    record_id = loaded.data.get("id")
    if not isinstance(record_id, str) or not is_id(record_id):
        raise RecordError(
            f"{source}: id {record_id!r} is not a record id "
            "(a-z or 0-9 first, then a-z, 0-9, '.', '_' or '-')"
        )
    if ".." in record_id.split("/") or record_id in (".", ".."):
        raise RecordError(f"{source}: id {record_id!r} would leave the records folder")
    return loaded.data


def dumps(record: dict) -> bytes:
    """The byte form gitkb writes a record in: 1-space indent, non-ASCII kept, newline."""
    return (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def scope_of(node: object) -> dict:
    """``node.retrieval.scope`` of a record or index entry; {} where it is not an object."""
    scope = dig(node, "retrieval", "scope")
    return scope if isinstance(scope, dict) else {}


def object_at(record: dict, source: str, *keys: str) -> dict:
    """``record[k1][k2]...`` for editing in place, made where missing; a RecordError naming
    ``source`` and the field when a level holds something other than an object."""
    node = record
    for depth, key in enumerate(keys):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            field_name = ".".join(keys[: depth + 1])
            raise RecordError(
                f"{source}: {field_name} is {json_type(child)}, not an object; "
                "nothing written (git kb validate lists what else is wrong)"
            )
        node = child
    return node


# retrieval.scope.dsl: the languages clean-1.3 knows.
DSLS = ("cuda", "cutedsl", "flydsl", "gluon", "triton", "aiter", "any")


def language_of(record: dict) -> str:
    """The language a record is in: ``retrieval.scope.dsl``, or, where clean-1.3's enum cannot
    name it (``any``: HIP, CK), ``payload.problem.dsl``; ``any`` when neither names one."""
    scoped = scope_of(record).get("dsl")
    if isinstance(scoped, str) and scoped.strip() and scoped.strip().lower() != "any":
        return scoped.strip().lower()
    stated = dig(record, "payload", "problem", "dsl")
    if isinstance(stated, str) and stated.strip():
        return stated.strip().lower()
    return "any"


# worth.track.counters: the six usage counters every record's track block holds.
COUNTERS = (
    "query_count",
    "served_count",
    "applied_count",
    "verified_effective",
    "verified_ineffective",
    "fallback_served",
)


def new_track(prior: dict | None = None, verified_effective: int = 0) -> dict:
    """A ``worth.track`` block for a new record: zero counters (but ``verified_effective``)
    and the known prior fields (nulls left out: the schema's prior never holds null)."""
    counters = dict.fromkeys(COUNTERS, 0)
    counters["verified_effective"] = verified_effective
    known = {k: v for k, v in (prior or {}).items() if v is not None}
    return {"counters": counters, "prior": known}


def is_id(value: object) -> bool:
    """Whether ``value`` spells a record id: ``[a-z0-9][a-z0-9._-]*`` (no ``re``: a reader
    checks ids before anything loads it)."""
    if not isinstance(value, str) or not value:
        return False
    return value[0] in _ID_FIRST and not value.strip(_ID_CHARS)


def _slug(value: object, default: str) -> str:
    text = value if isinstance(value, str) and value.strip() else default
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._") or default


def path_for(record: dict) -> str:
    """``records/<type>/<vendor>/<arch>/<dsl>/<operator_family>/<id>.json`` for a record."""
    scope = scope_of(record)
    parts = [
        _slug(record.get("type"), "unknown"),
        _slug(scope.get("vendor"), "generic"),
        _slug(scope.get("arch"), "generic"),
        _slug(scope.get("dsl"), "any"),
        _slug(scope.get("operator_family"), "misc"),
    ]
    return "/".join([RECORDS_DIR, *parts, f"{record['id']}.json"])


def is_record_path(path: str) -> bool:
    """A record is any ``*.json`` below ``records/`` except files named exactly ``index.json``."""
    name = path.rsplit("/", 1)[-1]
    return path.startswith(RECORDS_DIR + "/") and name.endswith(".json") and name != "index.json"


def read_folder(folder: str | os.PathLike) -> list[RecordFile]:
    """Record files of a folder laid out like a store (``<folder>/records/...``)."""
    root = Path(folder)
    records_dir = root / RECORDS_DIR
    if not records_dir.is_dir():
        raise RecordError(f"{root}: no records/ folder there")
    files = []
    for path in sorted(records_dir.rglob("*.json")):
        relative = path.relative_to(root).as_posix()
        if is_record_path(relative) and path.is_file() and not path.is_symlink():
            files.append(load(relative, path.read_bytes()))
    return files
