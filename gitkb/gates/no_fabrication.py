"""Trace gate `no-fabrication`: every number a mined record states comes from its packet.

The pool of allowed magnitudes is every number in the packet's agent-facing
evidence (its JSON, non-ASCII kept), its code and its target (JSON). Audited:
every string and number leaf under ``worth.gain``, ``evidence.summary``,
``payload`` and ``retrieval.signals.metrics`` (the reference's four), and, going
further, ``evidence.raw.effect``: its geomeans rank warm-start candidates, so a
tampered latency there would promote code, though agents are never served it.
Code-quoting keys are not audited.
Numbers are compared by absolute value in ``%g`` form (six significant digits),
integral values also in plain integer form; there is no other tolerance."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitkb.gates import Finding, Gate, GateContext
from gitkb.gates import trace_evidence as te
from gitkb.record import dig

if TYPE_CHECKING:
    from gitkb.record import RecordFile
    from gitkb.trace.packets import Packet

NAME = "no-fabrication"
AUDITED = (
    ("worth", "gain"),
    ("evidence", "summary"),
    ("payload",),
    ("retrieval", "signals", "metrics"),
    ("evidence", "raw", "effect"),
)
UNAUDITED_KEYS = frozenset({"snippet", "dispatch_snippet", "attempted_code"})
# A number glued to an ASCII letter, digit or dot is part of a name (B200, v1.2, f16).
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])-?\d+(?:\.\d+)?")
INVENTED = 87.6543


def magnitudes(text: str) -> set[str]:
    """The normalised magnitudes a text states."""
    found: set[str] = set()
    for token in set(_NUMBER.findall(text)):
        found |= normalised(token)
    return found


def normalised(token: str) -> set[str]:
    try:
        value = abs(float(token))
    except (OverflowError, ValueError):
        return set()
    forms = {f"{value:g}"}
    if value.is_integer():
        forms.add(str(int(value)))
    return forms


def pool(packet: Packet) -> set[str]:
    return (
        magnitudes(json.dumps(packet.agent_facing, ensure_ascii=False))
        | magnitudes(packet.code)
        | magnitudes(json.dumps(packet.target))
    )


def audited_leaves(data: dict) -> Iterator[tuple[str, str]]:
    """(field path, text) for every audited leaf, numbers in their usual decimal form."""
    for keys in AUDITED:
        node = dig(data, *keys)
        if node is not None:
            yield from _leaves(node, ".".join(keys))


def _leaves(node: object, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in UNAUDITED_KEYS:
                yield from _leaves(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, f"{where}[{i}]")
    elif isinstance(node, str):
        yield where, node
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield where, repr(node)


def _all_stated(data: dict, allowed: set[str]) -> bool:
    texts: list[str] = []
    for keys in AUDITED:
        _texts(dig(data, *keys), texts)
    tokens = set(_NUMBER.findall("\n".join(texts)))
    return all(normalised(token) & allowed or not normalised(token) for token in tokens)


def _texts(node: object, out: list[str]) -> None:
    """Every audited leaf of ``node`` as text, without its path (see ``_leaves``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in UNAUDITED_KEYS:
                _texts(value, out)
    elif isinstance(node, list):
        for value in node:
            _texts(value, out)
    elif isinstance(node, str):
        out.append(node)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        out.append(repr(node))


def check(ctx: GateContext) -> Iterator[Finding]:
    records = te.mined_records(ctx)
    te.require_traces(ctx)
    for record_file, data in records:
        found = te.evidence(ctx, data)
        if found.packet is None:
            yield Finding(
                record_file.id,
                NAME,
                f"no packet to check its numbers against: {found.problem}",
                "evidence.raw",
            )
            continue
        allowed = pool(found.packet)
        if _all_stated(data, allowed):
            continue  # the common case, decided without building a path per leaf
        for where, text in audited_leaves(data):
            seen: set[str] = set()
            for token in _NUMBER.findall(text):
                forms = normalised(token)
                if forms & allowed or not forms or forms & seen:
                    continue
                seen |= forms
                value = token.lstrip("-")
                yield Finding(
                    record_file.id, NAME, f"{value} is not stated by the trace's evidence", where
                )


GATE = Gate(NAME, "trace", "every number a mined record states occurs in its packet", check)


@GATE.edit("invented-number", te.first_mined)
def _invented_number(record_file: RecordFile) -> bool:
    data = record_file.data
    gain = (data.get("worth") or {}).get("gain") or {}
    metrics = gain.get("metrics") or []
    if metrics and isinstance(metrics[0], dict):
        metrics[0]["delta_pct"] = INVENTED
        gain["pct"] = INVENTED
        return True
    payload = data.get("payload") or {}
    for key in ("mechanism", "lesson"):
        if isinstance(payload.get(key), str) and payload[key]:
            payload[key] += f" ({INVENTED}% of the traffic)"
            return True
    return False


@GATE.edit("invented-signal-metric", te.first_mined)
def _invented_signal(record_file: RecordFile) -> None:
    signals = record_file.data.setdefault("retrieval", {}).setdefault("signals", {})
    metrics = signals.get("metrics")
    signals["metrics"] = {**(metrics if isinstance(metrics, dict) else {}), "dram_pct": 93.17}


@GATE.edit("invented-effect-geomean", te.first_mined)
def _invented_effect(record_file: RecordFile) -> None:
    """A better absolute latency than the trace measured: warm start ranks by it."""
    raw = record_file.data.setdefault("evidence", {}).setdefault("raw", {})
    effect = raw.get("effect") if isinstance(raw.get("effect"), dict) else {"basis": "measured"}
    raw["effect"] = {**effect, "new_geomean_us": 12.3457}


@GATE.edit("no-packet", te.first_mined)
def _unmatched_record(record_file: RecordFile) -> None:
    data = record_file.data
    data["id"] += "-unmined"
    data["evidence"]["raw"]["version"] = "v9999"


@GATE.edit("evidence-lost", te.packet_of_record(te.first_mined))
def _evidence_lost(packet: Packet) -> None:
    """The trace no longer states the record's numbers: the packet says nothing."""
    packet.agent_facing, packet.target, packet.diff, packet.kernel = {}, {}, None, None
