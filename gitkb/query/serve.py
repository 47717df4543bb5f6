"""The served projection: what an agent sees of a record.

Each hit carries its id, its type, ``applies_to`` (the record's scope as written),
``match`` (how the query reached it) and the payload. Nothing else leaves the
store: ``worth`` drives filtering and ordering but is never served (handing an
agent our own verdict would anchor its judgement instead of letting the
knowledge speak), nor ``evidence``, nor the engine-only retrieval keys
(``locator``, ``links``, signals, tags, triggers).

``brief`` keeps what supports a read-or-skip decision and drops the verbatim
code; every omitted field is named with its size, so a trimmed record is never
mistaken for a thin one.
"""

from __future__ import annotations

import json

from gitkb import record as rec

CODE_KEYS = ("snippet", "dispatch_snippet")
BRIEF_KEYS = (
    "goal",
    "problem",
    "what",
    "when",
    "verdict",
    "lesson",
    "attempted",
    "change",
    "mechanism",
    "cost",
    "established_fact",
)
_EXPLAINED = ("vendor", "arch", "dsl", "operator_family")
FALLBACK_NOTE = (
    "NOT query matches: nothing in scope matched, so this is a random sample of the scoped "
    "pool, offered only to show what kind of knowledge exists here. Do not treat it as advice "
    "about the queried problem."
)


def brief_payload(payload: dict) -> dict:
    """The payload trimmed to what supports a read-or-skip decision, omissions named."""
    out: dict = {}
    omitted: dict[str, int] = {}
    for key, value in payload.items():
        if key in BRIEF_KEYS:
            out[key] = value
        elif key == "implementation" and isinstance(value, dict):
            kept = {k: v for k, v in value.items() if k not in CODE_KEYS}
            for k in CODE_KEYS:
                if value.get(k):
                    omitted[f"implementation.{k}"] = len(value[k])
            if kept:
                out["implementation"] = kept
        else:
            omitted[key] = len(json.dumps(value, ensure_ascii=False))
    if omitted:
        out["omitted_by_brief"] = {
            "fields": omitted,
            "how_to_get_them": "re-query this id without --brief",
        }
    return out


def served(record: dict, reach: str | None, brief: bool = False) -> dict:
    """One hit as an agent sees it (``reach`` None: a record asked for by id, no match)."""
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    hit = {"id": record.get("id"), "type": record.get("type"), "applies_to": rec.scope_of(record)}
    if reach is not None:
        hit["match"] = {"arch": reach}
    hit["payload"] = brief_payload(payload) if brief else payload
    return hit


def title_of(hit: dict) -> str:
    payload = hit.get("payload") if isinstance(hit.get("payload"), dict) else {}
    problem = payload.get("problem") if isinstance(payload.get("problem"), dict) else {}
    for value in (payload.get("title"), payload.get("technique"), problem.get("statement")):
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return ""


def text_lines(answer: dict, explain: bool = False) -> list[str]:
    """The answer for a person: a banner when it is no match, then one line a hit (and,
    with ``explain``, the scope it applies to)."""
    result = answer["result"]
    lines = []
    if result["kind"] == "fallback":
        lines.append(
            "!! NOT MATCHES: a random sample of the scoped pool; nothing matched your query. "
            "Do not act on these."
        )
    elif result["kind"] == "empty":
        lines.append("(no records in scope match)")
    diagnosis = result.get("empty_because") or {}
    for item in diagnosis.get("single_filter_removals_that_would_match", [])[:3]:
        lines.append(f"-> dropping {item['drop']} would match {item['would_match']} record(s)")
    elsewhere = result.get("available_elsewhere")
    if elsewhere:
        n = elsewhere["matches_on_other_architectures_of_this_vendor"]
        lines.append(f"-> {n} match under this vendor's other architectures; re-run with "
                     "--cross-arch")  # fmt: skip
    for n, hit in enumerate(answer["records"], 1):
        label = "" if hit["match"]["arch"] == "exact" else f" [{hit['match']['arch']}]"
        title = title_of(hit)
        lines.append(
            f"{n:3}. {hit['id']}  ({hit['type']}){label}" + (f" - {title}" if title else "")
        )
        if explain:
            scope = hit["applies_to"]
            where = "/".join(str(scope.get(k) or "-") for k in _EXPLAINED)
            lines.append(f"     applies to {where}")
    return lines
