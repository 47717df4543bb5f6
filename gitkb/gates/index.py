"""Store gate `index`: the index agrees with the records (spec 4.6).

In a GPU-wiki tree, ``records/index.json`` is compared per record: an entry
exists, its ``retrieval`` deep-equals the record's, and
``worth_score``/``tier``/``gain_pct`` equal the record's rank score, tier and
gain pct. Count, path, title, search text and order are not compared, like the
reference. A gitkb store keeps no index file (store format 2): with ``--full``
its index cache is compared with a fresh rebuild from the records.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator

from gitkb.gates import Finding, Gate, GateContext, Skip
from gitkb.record import dig
from gitkb.record.index import INDEX_PATH

NAME = "index"


def _same(a: object, b: object) -> bool:
    # JSON equality: key order ignored, list order kept, 1 == 1.0, but True != 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def check(ctx: GateContext) -> Iterator[Finding]:
    if ctx.index_check is not None:
        if not ctx.full:
            raise Skip("a store's index is a cache under its git directory: --full checks it")
        yield from ctx.index_check()
        return
    found, by_id = whole_index(ctx.index_raw, len(ctx.records))
    yield from found
    if by_id is None:
        return
    for record_file, record in ctx.parsed():
        yield from disagreements(record_file.id, record, by_id.get(record.get("id")))


def whole_index(raw: bytes | None, record_count: int) -> tuple[list[Finding], dict | None]:
    """What is wrong with a GPU-wiki index file as a whole (missing, unreadable, another
    schema, a count that does not match ``record_count`` files), and its entries by id;
    None for the entries when the file cannot be read as an index at all."""
    if raw is None:
        return [Finding(INDEX_PATH, NAME, "records/index.json is missing")], None
    try:
        index = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [Finding(INDEX_PATH, NAME, f"records/index.json is not valid JSON: {exc}")], None
    if not isinstance(index, dict) or index.get("schema") != "clean-1.3":
        return [Finding(INDEX_PATH, NAME, "index schema is not 'clean-1.3'", "schema")], None
    entries = [e for e in index.get("records") or [] if isinstance(e, dict)]
    by_id = {e.get("id"): e for e in entries}
    found = []
    if len(by_id) != record_count:
        found.append(
            Finding(
                INDEX_PATH,
                NAME,
                f"index has {len(by_id)} distinct ids for {record_count} record files",
            )
        )
    return found, by_id


def disagreements(record_id: str, record: dict, entry: dict | None) -> Iterator[Finding]:
    """How one record's index entry (None when absent) disagrees with the record; the
    pre-receive hook applies the same comparison to the records a push changed."""
    if entry is None:
        yield Finding(record_id, NAME, "no index entry for this record")
        return
    if not _same(entry.get("retrieval"), record.get("retrieval")):
        yield Finding(
            record_id, NAME, "index entry's retrieval differs from the record's", "retrieval"
        )
    for key, path in (
        ("worth_score", ("worth", "rank", "score")),
        ("tier", ("worth", "rank", "tier")),
        ("gain_pct", ("worth", "gain", "pct")),
    ):
        if not _same(entry.get(key), dig(record, *path)):
            yield Finding(
                record_id,
                NAME,
                f"index {key} is {entry.get(key)!r}, the record says {dig(record, *path)!r}",
                ".".join(path),
            )


def _edit_first_entry(ctx: GateContext, edit: Callable[[dict, dict], object]) -> bool:
    index = json.loads(ctx.index_raw)
    edit(index, index["records"][0])
    ctx.index_raw = json.dumps(index).encode()
    return True


GATE = Gate(NAME, "store", "records/index.json agrees with the records", check, record_level=False)


@GATE.case("missing-index")
def _drop_index(ctx: GateContext) -> bool:
    ctx.index_raw = None
    return True


@GATE.case("stale-score")
def _stale_score(ctx: GateContext) -> bool:
    return _edit_first_entry(
        ctx, lambda _, e: e.update(worth_score=(e.get("worth_score") or 0) + 0.125)
    )


@GATE.case("stale-retrieval")
def _stale_retrieval(ctx: GateContext) -> bool:
    return _edit_first_entry(ctx, lambda _, e: e["retrieval"]["scope"].update(dsl="cuda-renamed"))


@GATE.case("missing-entry")
def _missing_entry(ctx: GateContext) -> bool:
    return _edit_first_entry(ctx, lambda index, e: index["records"].remove(e))


@GATE.case("unindexed-record")
def _unindexed_record(ctx: GateContext) -> bool:
    twin = copy.deepcopy(ctx.records[0])
    twin.data["id"] += "-new"
    twin.path = twin.path.replace(".json", "-new.json")
    ctx.records.append(twin)
    return True
