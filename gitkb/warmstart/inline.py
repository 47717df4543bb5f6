"""The code and references ``resolve`` serves inline (the MCP ``resolve`` tool), under a budget.

``resolve --out`` writes each rank's code into ``candidates/NN/`` and its prose into
``kb_references/``; an agent that asks over MCP gets the same two things in the answer
instead: ``code`` (``{"kind": "diff" | "source", "text", "dispatch"}``) on each rank and
alternate, and ``reference`` (the markdown ``kb_references`` holds) on each rank and
reference-only candidate. Retrieval happens inside a finite context, so ``max_bytes``
bounds the answer as printed: the least useful text goes first (alternates' code, then
reference-only prose, then the ranks' prose and code, the last rank first), each omission
named in ``budget.omitted`` so the caller can ask for that record by id. An answer that
does not fit even with no text in it is a usage error.
"""

from __future__ import annotations

import json

from gitkb.errors import GitkbError
from gitkb.record.curation import code_of
from gitkb.warmstart import curate
from gitkb.warmstart.references import render


def dumps(value: object) -> str:
    """A value as the answer prints it: compact JSON, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def size(value: object) -> int:
    return len(dumps(value).encode("utf-8"))


def code_block(record: dict) -> dict | None:
    """A record's code as served: its kind, the text, and the dispatch snippet if any."""
    found = code_of(record)
    if found is None:
        return None
    kind, text = found
    implementation = (record.get("payload") or {}).get("implementation") or {}
    dispatch = implementation.get("dispatch_snippet")
    if not isinstance(dispatch, str) or not dispatch.strip():
        dispatch = None
    return {"kind": kind, "text": text, "dispatch": dispatch}


def attach(answer: dict, ranks: list[curate.CodeRecord],
           reference_only: list[curate.CodeRecord], pitfalls: list[dict]) -> None:  # fmt: skip
    """Put each rank's code and reference (and its alternates' code) into ``answer``."""
    for rank, candidate in zip(answer["ranks"], ranks, strict=True):
        rank["code"] = code_block(candidate.record)
        rank["reference"] = render(rank, candidate.record, pitfalls)
        for alternate, alt in zip(rank["alternates"], candidate.alternates, strict=True):
            alternate["code"] = code_block(alt.record)
    for entry, candidate in zip(answer["reference_only"], reference_only, strict=True):
        entry["reference"] = render(entry, candidate.record, pitfalls)


def _removals(answer: dict) -> list[tuple[dict, str]]:
    """(holder, field) of every served text, the first to go first."""
    ranks = list(reversed(answer["ranks"]))
    order = [(alt, "code") for rank in ranks for alt in reversed(rank["alternates"])]
    order += [(entry, "reference") for entry in reversed(answer["reference_only"])]
    order += [(rank, "reference") for rank in ranks]
    order += [(rank, "code") for rank in ranks]
    return [(holder, name) for holder, name in order if holder.get(name) is not None]


def fit(answer: dict, max_bytes: int | None) -> dict:
    """Trim ``answer``'s served text to ``max_bytes`` as printed, in place; the answer."""
    if max_bytes is None:
        return answer
    answer["budget"] = {"max_bytes": max_bytes, "omitted": []}
    omitted = answer["budget"]["omitted"]
    total = size(answer)
    for holder, name in _removals(answer):
        if total <= max_bytes:
            break
        entry = {"id": holder["id"], "field": name}
        # null replaces the text; the omission joins the list (a comma after the first)
        total += 4 - size(holder[name]) + size(entry) + (1 if omitted else 0)
        holder[name] = None
        omitted.append(entry)
    total = size(answer)
    if total > max_bytes:
        raise GitkbError(
            f"max_bytes {max_bytes} is less than this resolve answer with no code or "
            f"references in it ({total} bytes)",
            2,
        )
    return answer
