"""Trace gate `profile`: a mined record validates against the opt-trace-1.0 profile
(clean-1.3 narrowed for what one trace can support), at most four errors a record."""

from __future__ import annotations

from collections.abc import Iterator

from gitkb import schema
from gitkb.gates import Finding, Gate, GateContext
from gitkb.gates.trace_evidence import first_mined, mined_records

NAME = "profile"
ERRORS_PER_RECORD = 4


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file, data in mined_records(ctx):
        for path, message in schema.errors(data, schema.PROFILE, limit=ERRORS_PER_RECORD):
            yield Finding(record_file.id, NAME, message, path)


def _mined_data(ctx: GateContext) -> dict | None:
    record_file = first_mined(ctx)
    return None if record_file is None else record_file.data


GATE = Gate(NAME, "trace", "mined records validate against the opt-trace-1.0 profile", check)


@GATE.edit("generic-level", _mined_data)
def _generic_level(data: dict) -> None:
    data["level"] = "generic"


@GATE.edit("technique-card", _mined_data)
def _technique_card(data: dict) -> None:
    data["type"] = "technique-card"


@GATE.edit("missing-git-commit", _mined_data)
def _drop_commit(data: dict) -> None:
    data["evidence"]["raw"].pop("git_commit", None)


@GATE.edit("page-pointer", _mined_data)
def _page_pointer(data: dict) -> None:
    data["evidence"]["raw"]["page_path"] = "kernel_wiki/softmax.md"


@GATE.edit("gain-without-kind", _mined_data)
def _gain_without_kind(data: dict) -> bool:
    gain = (data.get("worth") or {}).get("gain")
    if not isinstance(gain, dict):
        return False
    gain.pop("kind", None)
    return True
