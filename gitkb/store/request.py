"""An admission request (one record file, its action and provenance) and reading its
record: what the admission policy and the screening worker both take."""

from __future__ import annotations

from dataclasses import dataclass

from gitkb import record as rec


@dataclass
class AdmitRequest:
    """One record file to admit, with the admission's action and provenance."""

    raw: bytes
    action: str = "insert"
    target: str | None = None
    source: str = "<record>"
    trace: str | None = None
    trace_commit: str | None = None
    body: str = ""


def parse(request: AdmitRequest, max_bytes: int) -> tuple[dict, str]:
    """A request's record and its path; RecordError when its bytes are unusable."""
    record = rec.parse(request.raw, request.source, max_bytes)
    return record, rec.path_for(record)
