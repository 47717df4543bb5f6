"""Index entries and the GPU-wiki index file ``records/index.json``.

A gitkb store does not commit the index (store format 2): its entries live in a
cache under the git directory (``gitkb.store.cache.index_cache``). The file form is what a
GPU-wiki tree carries, what ``git kb export`` writes and what a store format 1
committed; ``Index.parse`` is the one parser of it.
"""

from __future__ import annotations

import json
from bisect import insort
from dataclasses import dataclass, field

from gitkb.errors import RecordError
from gitkb.record import RECORDS_DIR, SCHEMA_NAME, dig, is_id
from gitkb.record.signature import content_signature
from gitkb.record.values import array, mapping

INDEX_PATH = f"{RECORDS_DIR}/index.json"
_LINE_HEAD = b'{"id": "'


def _truthy(value: object) -> bool:
    return value not in (None, "", 0, False, [], {})


def _title(payload: dict) -> object:
    problem = mapping(payload.get("problem"))
    for value in (payload.get("title"), payload.get("technique"), problem.get("statement")):
        if _truthy(value):
            return value
    return None


def _search_text(record: dict) -> str:
    payload = mapping(record.get("payload"))
    problem = mapping(payload.get("problem"))
    retrieval = mapping(record.get("retrieval"))
    signals = mapping(retrieval.get("signals"))
    parts: list[object] = [record.get("id")]
    parts += [payload.get(k) for k in ("title", "goal", "technique", "what", "summary")]
    parts += [payload.get(k) for k in ("lesson", "attempted")]
    parts += [problem.get("statement"), problem.get("operator")]
    sections = array(payload.get("sections"))
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
        "title": _title(mapping(record.get("payload"))),
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


@dataclass(slots=True)
class Index:
    """``records/index.json``: entries sorted by id, one compact JSON line each, so a
    file gitkb wrote parses back by splitting lines."""

    lines: dict[str, bytes] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: bytes | None, source: str = INDEX_PATH) -> Index:
        """The index in ``raw`` (None: an empty index). gitkb's own one-entry-a-line layout
        is split into lines without decoding the entries; any other layout takes the JSON
        parser. Entries without a string id are left out (the index gate reports them)."""
        if raw is None:
            return cls()
        fast = cls._parse_lines(raw)
        if fast is not None:
            return fast
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise RecordError(f"{source}: the index is not valid JSON ({exc})") from None
        entries = data.get("records") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise RecordError(f"{source}: the index has no records list")
        index = cls()
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                index.put(entry)
        return index

    @classmethod
    def _parse_lines(cls, raw: bytes) -> Index | None:
        """``dumps``' layout read back line by line; None when ``raw`` is not in it."""
        lines = raw.split(b"\n")
        try:
            start = lines.index(b' "records": [')
        except ValueError:
            return None
        if lines[0] != b"{" or lines[-3:] != [b" ]", b"}", b""]:
            return None
        try:
            header = json.loads(b"\n".join([*lines[:start], b' "records": []}']))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        if not isinstance(header, dict) or header.get("schema") != SCHEMA_NAME:
            return None
        body = lines[start + 1 : -3]
        entries: dict[str, bytes] = {}
        order: list[str] = []
        for n, line in enumerate(body):
            if n < len(body) - 1:
                if not line.endswith(b","):
                    return None
                line = line[:-1]
            end = line.find(b'"', len(_LINE_HEAD))
            if not line.startswith(_LINE_HEAD) or not line.endswith(b"}") or end < 0:
                return None
            record_id = line[len(_LINE_HEAD) : end].decode("ascii", "replace")
            if "\\" in record_id or not is_id(record_id) or record_id in entries:
                return None  # an escaped or repeated id: the JSON parser and the gates decide
            entries[record_id] = line
            order.append(record_id)
        if order != sorted(order):
            return None
        return cls(lines=entries, order=order)

    def __contains__(self, record_id: str) -> bool:
        return record_id in self.lines

    def __len__(self) -> int:
        return len(self.order)

    def put(self, entry: dict) -> None:
        record_id = entry["id"]
        if record_id not in self.lines:
            insort(self.order, record_id)
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
        fields = "".join(f" {json.dumps(k)}: {json.dumps(v)},\n" for k, v in header.items())
        head = "{\n" + fields
        opening, closing = head.encode() + b' "records": [\n', b" ]\n}\n"
        lines = list(map(self.lines.__getitem__, self.order))
        if not lines:
            return opening + closing
        # One join, so the megabytes of entries are copied once: the opening rides on the
        # first entry and the closing on the last.
        lines[0] = opening + lines[0]
        lines[-1] = lines[-1] + b"\n" + closing
        return b",\n".join(lines)
