"""Store gate `schema`: every record validates against gitkb's clean-1.3 JSON Schema."""

from __future__ import annotations

from collections.abc import Iterator

from gitkb import schema
from gitkb.gates import Finding, Gate, GateContext

NAME = "schema"


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file in ctx.records:
        if record_file.data is None:
            yield Finding(record_file.id, NAME, record_file.error or "unreadable record")
            continue
        for path, message in schema.errors(record_file.data):
            yield Finding(record_file.id, NAME, message, path)


GATE = Gate(NAME, "store", "records validate against the clean-1.3 JSON Schema", check, alone=True)


@GATE.case("unknown-level")
def _set_level(ctx: GateContext) -> bool:
    ctx.records[0].data["level"] = "kernel"
    return True


@GATE.case("missing-goal")
def _drop_goal(ctx: GateContext) -> bool:
    ctx.records[0].data["payload"].pop("goal", None)
    return True


@GATE.case("extra-scope-key")
def _open_closed_block(ctx: GateContext) -> bool:
    ctx.records[0].data["retrieval"]["scope"]["gpu_count"] = 8
    return True


@GATE.case("truncated-json")
def _break_json(ctx: GateContext) -> bool:
    record_file = ctx.records[0]
    record_file.raw = record_file.raw[: len(record_file.raw) // 2]
    record_file.data, record_file.error = None, "malformed JSON: truncated"
    return True
