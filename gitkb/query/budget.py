"""The answer's byte budget: retrieval happens inside a finite context, so volume is part
of correctness. ``--max-bytes`` is never exceeded. The weakest hits (the answer's tail)
go first until the answer, as printed, fits, and ``dropped_for_budget`` says how many.
A best hit bigger than the whole budget is served in its brief form (the code left out,
each omitted field named) when that fits, and ``trimmed_for_budget`` names it; when even
that does not fit it is left out too, and ``over_budget_hit`` names it and its size, so
the caller can ask for it by id. A budget smaller than the answer with no records at all
is a usage error."""

from __future__ import annotations

import json

from gitkb.errors import GitkbError
from gitkb.query.serve import brief_payload


def dumps(answer: object) -> str:
    """The answer as printed: one compact line of JSON, non-ASCII kept."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def size(value: object) -> int:
    return len(dumps(value).encode("utf-8"))


def _brief(hit: dict) -> dict | None:
    """The hit with its payload in brief form; None when it is brief already."""
    payload = hit.get("payload")
    if not isinstance(payload, dict) or "omitted_by_brief" in payload:
        return None
    return {**hit, "payload": brief_payload(payload)}


def fit(answer: dict, max_bytes: int | None) -> dict:
    """Trim ``answer["records"]`` (best first) to ``max_bytes``, in place; the answer."""
    if not max_bytes or size(answer) <= max_bytes:
        return answer
    records = answer["records"]
    result = answer["result"]
    total = len(records)
    sizes = [size(r) for r in records]

    def needed(keep: int) -> int:
        result["served"] = keep
        result["dropped_for_budget"] = total - keep
        return size({**answer, "records": []}) + sum(sizes[:keep]) + max(0, keep - 1)

    keep = total
    while keep and needed(keep) > max_bytes:
        keep -= 1
    best = records[0] if records else None
    del records[keep:]
    if not keep and best is not None:
        trimmed = _brief(best)
        result["trimmed_for_budget"] = best.get("id")
        if trimmed is not None and needed(1) - sizes[0] + size(trimmed) <= max_bytes:
            records.append(trimmed)
            needed(1)
        else:
            del result["trimmed_for_budget"]
            result["over_budget_hit"] = {"id": best.get("id"), "bytes": sizes[0]}
            needed(0)
    if not result["dropped_for_budget"]:
        del result["dropped_for_budget"]
    if size(answer) > max_bytes:
        raise GitkbError(
            f"--max-bytes {max_bytes} is less than this query's answer with no records in it "
            f"({size({**answer, 'records': []})} bytes)",
            2,
        )
    return answer
