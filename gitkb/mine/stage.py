"""``git kb mine --stage-only DIR``: a folder laid out like a store, for review.

It holds the records that passed every gate (``records/...``, with a GPU-wiki
``records/index.json``), each refused record with all of its gate findings
(``refused/<label>/<seg_id>.json``), every packet (``packets/<label>/<seg_id>.json``,
code inline), the options the packets were built with (``traces/<label>.json``, so
``git kb validate DIR --trace TRACE`` rebuilds the same packets) and the reports.
"""

from __future__ import annotations

import json
from pathlib import Path

from gitkb import layout
from gitkb import record as rec
from gitkb.mine.admit import options_document
from gitkb.mine.distill import Attempt
from gitkb.mine.result import MineResult, Outcome
from gitkb.record.index import INDEX_PATH, Index, index_entry
from gitkb.trace.options import TraceOptions
from gitkb.trace.packets import Packet
from gitkb.util.files import atomic_write

PACKETS_DIR = "packets/{label}"
REFUSED_DIR = "refused/{label}"


def stage(
    folder: Path,
    result: MineResult,
    options: TraceOptions,
    packets: list[Packet],
    ready: list[Attempt],
    refused: list[Attempt],
) -> list[Outcome]:
    """Write the run into ``folder``; the outcomes of the staged records."""
    label = result.label
    index_path = folder / INDEX_PATH
    index = Index.parse(index_path.read_bytes() if index_path.is_file() else None)
    outcomes = []
    for attempt in ready:
        record = attempt.result.record
        path = rec.path_for(record)
        atomic_write(folder / path, rec.dumps(record))
        index.put(index_entry(record, path))
        outcomes.append(
            Outcome(
                attempt.packet.seg_id,
                attempt.packet.record_type,
                "staged",
                record["id"],
                path,
                missing=attempt.result.missing,
                retried=attempt.retried,
            )
        )
    atomic_write(index_path, index.dumps())
    for attempt in refused:
        document = {
            "record": attempt.result.record,
            "findings": [f.as_json() for f in attempt.findings],
        }
        name = f"{REFUSED_DIR.format(label=label)}/{attempt.packet.seg_id}.json"
        atomic_write(folder / name, _dumps(document))
    for packet in packets:
        name = f"{PACKETS_DIR.format(label=label)}/{packet.seg_id}.json"
        atomic_write(folder / name, _dumps(packet.as_json()))
    atomic_write(
        folder / layout.TRACE_OPTIONS_PATH.format(label=label),
        options_document(label, options, result.label_choice),
    )
    return outcomes


def write_reports(folder: Path, result: MineResult) -> None:
    for name, data in result.reports.items():
        atomic_write(folder / layout.REPORTS_DIR.format(label=result.label) / name, data)


def _dumps(document: dict) -> bytes:
    return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode()
