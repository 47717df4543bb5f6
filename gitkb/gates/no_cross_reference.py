"""Store gate `no-cross-reference` (spec 4.8): a record points at no other page or record.

An agent is served one record, not the repository: "see docs/x.md" or another
record's id is a dead end for it. The gate serialises ``{payload, gain}`` once,
blanks the JSON form of every code string (verbatim code may name anything),
and searches the rest. A stored record must not carry the serve-time fields
``source_text`` / ``source_truncated`` either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from gitkb.gates import Finding, Gate, GateContext, first_of_type
from gitkb.gates.anonymization import CODE_KEYS, MARKDOWN_PAGE, child_path

NAME = "no-cross-reference"

# 'docs/' or 'records/' and the path after it, even glued to a word before it ('mydocs/x').
REPOSITORY_DIRECTORY = re.compile(r"(?:docs|records)/[\w./-]+")
# A GPU-wiki NVIDIA record id's first four segments: 'nvidia.b200.gluon.pitfalls.' (b200, b300
# or any as the product); ids of other vendors or products are deliberately not matched.
NVIDIA_RECORD_ID = re.compile(r"\bnvidia\.(?:b200|b300|any)\.[a-z0-9-]+\.[a-z0-9-]+\.")

# (what it is, pattern, literals of which every match contains one: skips a hopeless search)
REFERENCE_PATTERNS = (
    ("repository path", MARKDOWN_PAGE, (".md",)),
    ("repository path", REPOSITORY_DIRECTORY, ("docs/", "records/")),
    ("record id", NVIDIA_RECORD_ID, ("nvidia.",)),
)
SERVE_TIME_KEYS = ("source_text", "source_truncated")


def _code_strings(node: object, found: list[str]) -> list[str]:
    """Every string stored directly under a code key anywhere below ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CODE_KEYS and isinstance(value, str):
                found.append(value)
            else:
                _code_strings(value, found)
    elif isinstance(node, list):
        for value in node:
            _code_strings(value, found)
    return found


def _gain(record: dict) -> object:
    worth = record.get("worth")
    return (worth.get("gain") if isinstance(worth, dict) else None) or {}


def searched_text(record: dict) -> str:
    """``{payload, gain}`` as JSON (non-ASCII kept) with every code string's JSON form blanked."""
    payload = record.get("payload")
    text = json.dumps({"payload": payload, "gain": _gain(record)}, ensure_ascii=False, default=str)
    for code in _code_strings(payload, []):
        text = text.replace(json.dumps(code, ensure_ascii=False), '""')
    return text


def _texts(node: object, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) for every key and string value below ``node``, code strings left out."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield child_path(path, key), key
            if not (key in CODE_KEYS and isinstance(value, str)):
                yield from _texts(value, child_path(path, key))
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from _texts(value, child_path(path, position))


def _where(record: dict, found: str) -> str:
    """The path of the first key or string (in its JSON form) that holds ``found``."""
    for root, node in (("payload", record.get("payload")), ("worth.gain", _gain(record))):
        for path, text in _texts(node, root):
            if found in json.dumps(text, ensure_ascii=False):
                return path
    return ""


def _references(record_id: str, record: dict, text: str) -> Iterator[Finding]:
    for what, pattern, literals in REFERENCE_PATTERNS:
        if not any(literal in text for literal in literals):
            continue
        for match in pattern.finditer(text):
            where = _where(record, match.group())
            place = f" in {where}" if where else ""
            yield Finding(record_id, NAME, f"{what} {match.group()!r}{place}", where)


def _serve_time_fields(record_id: str, record: dict) -> Iterator[Finding]:
    payload = record.get("payload")
    implementation = payload.get("implementation") if isinstance(payload, dict) else None
    if not isinstance(implementation, dict):
        return
    stored = [key for key in SERVE_TIME_KEYS if key in implementation]
    if stored:
        yield Finding(
            record_id,
            NAME,
            f"serve-time field {' and '.join(stored)} stored in the record",
            f"payload.implementation.{stored[0]}",
        )


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file, record in ctx.parsed():
        yield from _references(record_file.id, record, searched_text(record))
        yield from _serve_time_fields(record_file.id, record)


# --- injection cases ----------------------------------------------------------------------


_strategy = first_of_type("strategy")

GATE = Gate(NAME, "store", "records point at no repository page or other record", check, alone=True)


@GATE.case("docs-page-in-lesson")
def _docs_page_in_lesson(ctx: GateContext) -> bool:
    ctx.records[0].data["payload"]["lesson"] += " Details in docs/triton/layernorm-tuning.md."
    return True


@GATE.edit("record-id-in-next-steps", _strategy)
def _record_id_in_next_steps(strategy: dict) -> None:
    strategy["payload"]["next_steps"].append(
        "combine with nvidia.b200.triton.softmax.online-softmax-r01 on Blackwell"
    )


@GATE.edit("stored-source-text", _strategy)
def _stored_source_text(strategy: dict) -> None:
    implementation = strategy["payload"]["implementation"]
    implementation["source_text"] = implementation["snippet"]
    implementation["source_truncated"] = False


@GATE.edit("records-path-in-gain-note", _strategy)
def _records_path_in_gain_note(strategy: dict) -> None:
    strategy["worth"]["gain"]["note"] = (
        "baseline as in records/strategy/nvidia/hopper/triton/softmax/three-pass.json"
    )
