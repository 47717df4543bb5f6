"""Trace gate `layout`: a mined record is filed at
``records/<type>/<vendor>/<arch>/<dsl or any>/<operator_family or misc>/<id>.json``.

Imported records keep the paths their store gave them; only mined ones are held
to gitkb's layout (the store `ids` gate checks every file name)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitkb.gates import Finding, Gate, GateContext
from gitkb.gates.trace_evidence import first_mined, mined_records
from gitkb.record import RECORDS_DIR

if TYPE_CHECKING:
    from gitkb.record import RecordFile

NAME = "layout"


def expected_path(data: dict) -> str:
    scope = (data.get("retrieval") or {}).get("scope") or {}
    scope = scope if isinstance(scope, dict) else {}
    parts = [
        data.get("type") or "?",
        scope.get("vendor") or "?",
        scope.get("arch") or "?",
        scope.get("dsl") or "any",
        scope.get("operator_family") or "misc",
    ]
    return "/".join([RECORDS_DIR, *map(str, parts), f"{data.get('id')}.json"])


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file, data in mined_records(ctx):
        wanted = expected_path(data)
        if record_file.path != wanted:
            yield Finding(
                record_file.id, NAME, f"filed at {record_file.path}, expected {wanted}", "id"
            )


GATE = Gate(
    NAME, "trace", "mined records are filed under type/vendor/arch/dsl/operator_family", check
)


@GATE.edit("scope-mismatch", first_mined)
def _scope_mismatch(record_file: RecordFile) -> None:
    scope = record_file.data["retrieval"]["scope"]
    scope["dsl"] = "triton" if scope.get("dsl") == "cuda" else "cuda"


@GATE.edit("other-vendor-folder", first_mined)
def _other_vendor_folder(record_file: RecordFile) -> bool:
    parts = record_file.path.split("/")
    if len(parts) < 4:
        return False
    parts[2] = "amd" if parts[2] != "amd" else "nvidia"
    record_file.path = "/".join(parts)
    return True


@GATE.edit("flat-file", first_mined)
def _flat_file(record_file: RecordFile) -> None:
    record_file.path = f"{RECORDS_DIR}/{record_file.data['id']}.json"


@GATE.edit("operator-family-changed", first_mined)
def _operator_family_changed(record_file: RecordFile) -> None:
    scope = record_file.data["retrieval"]["scope"]
    scope["operator_family"] = "norm" if scope.get("operator_family") != "norm" else "softmax"
