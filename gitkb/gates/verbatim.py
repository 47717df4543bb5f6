"""Trace gate `verbatim`: code a mined record quotes is the trace's code, line by line.

Each quoted line longer than 12 characters (whitespace runs folded to one space)
must occur in the packet's code (its diff, then the kernel file at the commit),
folded the same way; shorter lines (braces, `else:`) are too common to prove
anything. Records without a packet are left to `no-fabrication` and
`provenance`, which report them.

Comments in quoted code were scrubbed when the packet was built (rule 11). Where the
gate's own rebuild could not scrub the same way (a server without the private denylist),
a quoted line holding one of the scrubber's words for private text matches a code line
that equals it with that word standing for any text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitkb.gates import Finding, Gate, GateContext
from gitkb.gates import trace_evidence as te
from gitkb.trace.scrub import PLACEHOLDERS

if TYPE_CHECKING:
    from gitkb.record import RecordFile
    from gitkb.trace.packets import Packet

NAME = "verbatim"
MIN_LINE_CHARS = 12
QUOTING_FIELDS = ("implementation", "attempted_code")
_WHITESPACE = re.compile(r"\s+")
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


def fold(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def snippets(data: dict) -> list[tuple[str, str]]:
    """(field path, snippet) for every non-empty code quote in the payload."""
    payload = data.get("payload")
    if not isinstance(payload, dict):
        return []
    found = []
    for key in QUOTING_FIELDS:
        value = payload.get(key)
        if isinstance(value, dict):
            value, where = value.get("snippet"), f"payload.{key}.snippet"
        else:
            where = f"payload.{key}"
        if isinstance(value, str) and value.strip():
            found.append((where, value))
    return found


def check(ctx: GateContext) -> Iterator[Finding]:
    records = te.mined_records(ctx)
    te.require_traces(ctx)
    for record_file, data in records:
        quoted = snippets(data)
        if not quoted:
            continue
        packet = te.evidence(ctx, data).packet
        if packet is None:
            continue
        code = fold(packet.code)
        code_lines = None
        for where, snippet in quoted:
            if not code:
                yield Finding(record_file.id, NAME, "quotes code but the packet has none", where)
                continue
            lines = [fold(line) for line in snippet.splitlines()]
            missing = [line for line in lines if len(line) > MIN_LINE_CHARS and line not in code]
            if missing and any(_PLACEHOLDER.search(line) for line in missing):
                code_lines = code_lines or [fold(line) for line in packet.code.splitlines()]
                missing = [line for line in missing if not _scrubbed_from(line, code_lines)]
            if missing:
                yield Finding(
                    record_file.id,
                    NAME,
                    f"{len(missing)} quoted line{'s' if len(missing) != 1 else ''} not in the "
                    f"trace's code, first: {missing[0][:80]!r}",
                    where,
                )


def _scrubbed_from(line: str, code_lines: list[str]) -> bool:
    """Whether ``line`` is a code line with private text replaced by the scrubber's words."""
    parts = _PLACEHOLDER.split(line)
    if len(parts) == 1:
        return False
    pattern = re.compile(".+?".join(re.escape(part) for part in parts))
    return any(pattern.fullmatch(candidate) for candidate in code_lines)


def _quoting(ctx: GateContext) -> RecordFile | None:
    return te.first_mined(ctx, lambda data: bool(snippets(data)))


GATE = Gate(
    NAME, "trace", "quoted code occurs line by line in the trace's code at the cited commit", check
)


@GATE.edit("paraphrased-snippet", _quoting)
def _paraphrased(record_file: RecordFile) -> None:
    invented = "+    acc = fused_rescale_accumulate(acc, x_tile, running_max)\n"
    _replace_snippet(record_file.data, invented)


@GATE.edit("renamed-variable", _quoting)
def _renamed_variable(record_file: RecordFile) -> bool:
    snippet = snippets(record_file.data)[0][1]
    lines = snippet.splitlines()
    for i, line in enumerate(lines):
        if len(fold(line)) > MIN_LINE_CHARS:
            lines[i] = line.replace("=", "= gitkb_renamed_", 1) if "=" in line else line + "_x"
            _replace_snippet(record_file.data, "\n".join(lines) + "\n")
            return True
    return False


@GATE.edit("packet-without-code", te.packet_of_record(_quoting))
def _packet_without_code(packet: Packet) -> None:
    packet.diff = packet.kernel = None


def _replace_snippet(data: dict, text: str) -> None:
    payload = data["payload"]
    for key in QUOTING_FIELDS:
        value = payload.get(key)
        if isinstance(value, dict) and isinstance(value.get("snippet"), str):
            value["snippet"] = text
            return
        if isinstance(value, str):
            payload[key] = text
            return
