"""The answer's byte budget: retrieval happens inside a finite context, so volume is part
of correctness. ``--max-bytes`` drops the weakest hits (the answer's tail) until the
answer, as printed, fits, and says how many it dropped; a single hit bigger than the
whole budget is kept and flagged ``over_budget`` rather than pretending it fits."""

from __future__ import annotations

import json


def dumps(answer: dict) -> str:
    """The answer as printed: one compact line of JSON, non-ASCII kept."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def size(value: object) -> int:
    return len(dumps(value).encode("utf-8"))


def fit(answer: dict, max_bytes: int | None) -> dict:
    """Trim ``answer["records"]`` (best first) to ``max_bytes``, in place; the answer."""
    records = answer["records"]
    result = answer["result"]
    if not max_bytes or size(answer) <= max_bytes:
        return answer
    sizes = [size(r) for r in records]
    total = len(records)
    keep = total
    while True:
        result["served"] = keep
        result["dropped_for_budget"] = total - keep
        shell = size({**answer, "records": []})
        needed = shell + sum(sizes[:keep]) + max(0, keep - 1)
        if needed <= max_bytes or keep <= 1:
            break
        keep -= 1
    del records[keep:]
    if not result["dropped_for_budget"]:
        del result["dropped_for_budget"]
    if size(answer) > max_bytes:
        result["over_budget"] = True
    return answer
