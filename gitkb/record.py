"""Record helpers: parsing, ids, scope -> path, index entries and the index file."""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field

from gitkb.errors import RecordError
from gitkb.warmstart.signature import content_signature

SCHEMA_NAME = "clean-1.3"
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]*")
MIN_ID_SEGMENTS = 5
INDEX_PATH = "records/index.json"
RECORDS_DIR = "records"


@dataclass
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
    """Parse record bytes without raising; a parse failure is kept on the result."""
    if not raw.strip():
        return RecordFile(path, raw, None, "empty (a record is one JSON object)")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return RecordFile(path, raw, None, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        return RecordFile(path, raw, None, f"malformed JSON: {exc.msg} (line {exc.lineno})")
    except RecursionError:
        return RecordFile(path, raw, None, "malformed JSON: nested too deeply")
    if not isinstance(data, dict):
        return RecordFile(path, raw, None, f"a record is a JSON object, got {json_type(data)}")
    return RecordFile(path, raw, data)


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type (``object``, ``array``, ``null``, ...)."""
    if isinstance(value, bool):
        return "boolean"
    names = {dict: "object", list: "array", str: "string", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def parse(raw: bytes, source: str) -> dict:
    """Parse one record for admission; raise RecordError naming ``source`` when unusable."""
    loaded = load(source, raw)
    if loaded.data is None:
        raise RecordError(f"{source}: {loaded.error}")
    record_id = loaded.data.get("id")
    if not isinstance(record_id, str) or not ID_PATTERN.fullmatch(record_id):
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


def dig(node: object, *keys: str) -> object:
    """``node[k1][k2]...``, or None where a key is missing or a level is not an object."""
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


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


def _truthy(value: object) -> bool:
    return value not in (None, "", 0, False, [], {})


def _title(payload: dict) -> object:
    problem = payload.get("problem") if isinstance(payload.get("problem"), dict) else {}
    for value in (payload.get("title"), payload.get("technique"), problem.get("statement")):
        if _truthy(value):
            return value
    return None


def _search_text(record: dict) -> str:
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    problem = payload.get("problem") if isinstance(payload.get("problem"), dict) else {}
    retrieval = record.get("retrieval") if isinstance(record.get("retrieval"), dict) else {}
    signals = retrieval.get("signals") if isinstance(retrieval.get("signals"), dict) else {}
    parts: list[object] = [record.get("id")]
    parts += [payload.get(k) for k in ("title", "goal", "technique", "what", "summary")]
    parts += [payload.get(k) for k in ("lesson", "attempted")]
    parts += [problem.get("statement"), problem.get("operator")]
    sections = payload.get("sections") if isinstance(payload.get("sections"), list) else []
    parts += [s.get("heading") for s in sections if isinstance(s, dict)]
    for key, source in (
        ("triggers", retrieval),
        ("technique_tags", retrieval),
        ("symptoms", signals),
    ):
        items = source.get(key)
        parts += items if isinstance(items, list) else []
    return " ".join(str(p) for p in parts if _truthy(p) and isinstance(p, str)).lower()


def index_entry(record: dict, path: str) -> dict:
    """The index entry of a record: the reindexer's sixteen keys, plus gitkb's
    ``content_signature`` so an admission finds a reproduction without loading records."""

    track = dig(record, "evidence", "summary", "measured_on", "track")
    tracks = sorted({t for t in track.split("/") if t}) if isinstance(track, str) else []
    return {
        "id": record.get("id"),
        "type": record.get("type"),
        "level": record.get("level"),
        "status": record.get("status"),
        "episode_key": record.get("episode_key"),
        "path": path,
        "title": _title(record.get("payload") if isinstance(record.get("payload"), dict) else {}),
        "retrieval": record.get("retrieval"),
        "worth_score": dig(record, "worth", "rank", "score"),
        "tier": dig(record, "worth", "rank", "tier"),
        "gain_pct": dig(record, "worth", "gain", "pct"),
        "page_path": dig(record, "evidence", "raw", "page_path"),
        "search_text": _search_text(record),
        "tracks": tracks or None,
        "speedup_x": dig(record, "retrieval", "signals", "metrics", "page_best_speedup_x"),
        "refk_status": dig(record, "evidence", "raw", "evidence_extra", "manifest_status"),
        "content_signature": content_signature(record),
    }


@dataclass
class Index:
    """``records/index.json``: entries sorted by id, one compact JSON line each.

    One line per entry keeps an admission's diff to one line and lets an
    insert splice a line instead of re-serializing every entry.
    """

    lines: dict[str, bytes] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: bytes | None, source: str = INDEX_PATH) -> Index:
        if raw is None:
            return cls()
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise RecordError(
                f"{source}: the index is not valid JSON ({exc}); run git kb reindex"
            ) from None
        entries = data.get("records") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise RecordError(f"{source}: the index has no records list; run git kb reindex")
        index = cls()
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                index.put(entry)
        return index

    def __contains__(self, record_id: str) -> bool:
        return record_id in self.lines

    def __len__(self) -> int:
        return len(self.order)

    def put(self, entry: dict) -> None:
        record_id = entry["id"]
        if record_id not in self.lines:
            bisect.insort(self.order, record_id)
        self.lines[record_id] = json.dumps(entry, ensure_ascii=False).encode("utf-8")

    def remove(self, record_id: str) -> None:
        if self.lines.pop(record_id, None) is not None:
            self.order.remove(record_id)

    def entry(self, record_id: str) -> dict | None:
        line = self.lines.get(record_id)
        return None if line is None else json.loads(line)

    def entries(self) -> list[dict]:
        return [json.loads(self.lines[i]) for i in self.order]

    def dumps(self) -> bytes:
        header = {
            "schema": SCHEMA_NAME,
            "generated_by": "gitkb",
            "builder_version": "gitkb-1",
            "count": len(self.order),
        }
        head = "{\n" + "".join(f" {json.dumps(k)}: {json.dumps(v)},\n" for k, v in header.items())
        opening, closing = head.encode() + b' "records": [\n', b" ]\n}\n"
        lines = list(map(self.lines.__getitem__, self.order))
        if not lines:
            return opening + closing
        # One join, so the megabytes of entries are copied once: the opening rides on the
        # first entry and the closing on the last.
        lines[0] = opening + lines[0]
        lines[-1] = lines[-1] + b"\n" + closing
        return b",\n".join(lines)
