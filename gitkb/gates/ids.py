"""Store gate `ids`: ids are well-formed, unique, five or more segments, and name their file."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator

from gitkb.gates import Finding, Gate, GateContext
from gitkb.record import MIN_ID_SEGMENTS, is_id

NAME = "ids"


def check(ctx: GateContext) -> Iterator[Finding]:
    counts = Counter(data.get("id") for _, data in ctx.parsed())
    for record_file, data in ctx.parsed():
        record_id = data.get("id")
        if not is_id(record_id):
            yield Finding(record_file.id, NAME, f"id {record_id!r} is not a valid record id", "id")
            continue
        if counts[record_id] > 1:
            yield Finding(record_id, NAME, f"id is used by {counts[record_id]} records", "id")
        basename = record_file.path.rsplit("/", 1)[-1]
        if basename != f"{record_id}.json":
            yield Finding(
                record_id, NAME, f"file is named {basename}, expected {record_id}.json", "id"
            )
        segments = len(record_id.split("."))
        if segments < MIN_ID_SEGMENTS:
            yield Finding(
                record_id,
                NAME,
                f"id has {segments} dot-separated segments, needs {MIN_ID_SEGMENTS}",
                "id",
            )


GATE = Gate(
    NAME, "store", "ids are unique, five segments or more, and name their file", check, alone=True
)


@GATE.case("duplicate-id")
def _duplicate(ctx: GateContext) -> bool:
    twin = copy.deepcopy(ctx.records[0])
    twin.path = twin.path.rsplit("/", 1)[0] + "/elsewhere/" + twin.path.rsplit("/", 1)[1]
    ctx.records.append(twin)
    return True


@GATE.case("file-name-mismatch")
def _rename(ctx: GateContext) -> bool:
    ctx.records[0].data["id"] += "-renamed"
    return True


@GATE.case("too-few-segments")
def _short(ctx: GateContext) -> bool:
    record_file = ctx.records[0]
    record_file.data["id"] = "nvidia.hopper.short"
    record_file.path = record_file.path.rsplit("/", 1)[0] + "/nvidia.hopper.short.json"
    return True


@GATE.case("uppercase-id")
def _uppercase(ctx: GateContext) -> bool:
    record_file = ctx.records[0]
    record_file.data["id"] = record_file.data["id"].upper()
    record_file.path = record_file.path.rsplit("/", 1)[0] + f"/{record_file.data['id']}.json"
    return True
