"""The output schemas of ``git kb mcp``'s tools: JSON Schema for each answer's document.

A client checks every structured answer against its tool's schema (the SDK's own client
does), so each schema states what the document always holds (its keys, their types, the
closed vocabularies) and leaves open what records carry, which is the record format's
business. The server does not check its own answers against them on every call.
"""

from __future__ import annotations

from gitkb.warmstart.attest import OUTCOMES as ATTEST_OUTCOMES

_OBJECT = {"type": "object"}
_STRING = {"type": "string"}
_COUNT = {"type": "integer", "minimum": 0}
_COMMIT = {"type": ["string", "null"]}
_TEXT_OR_NULL = {"type": ["string", "null"]}

SERVED_RECORD = {
    "type": "object",
    "required": ["id", "type", "applies_to", "payload"],
    "properties": {
        "id": _STRING,
        "type": _STRING,
        "applies_to": _OBJECT,
        "match": _OBJECT,
        "payload": _OBJECT,
    },
}

_QUERY_RESULT = {
    "type": "object",
    "required": ["kind", "served", "scoped_pool", "store_total", "commit"],
    "properties": {
        "kind": {"enum": ["matches", "empty", "fallback"]},
        "served": _COUNT,
        "scoped_pool": _COUNT,
        "store_total": _COUNT,
        "commit": _COMMIT,
        "note": _TEXT_OR_NULL,
        "dropped_for_budget": _COUNT,
        "trimmed_for_budget": _STRING,
        "over_budget_hit": _OBJECT,
        "empty_because": _OBJECT,
        "available_elsewhere": _OBJECT,
    },
}

_ANSWER = {
    "type": "object",
    "required": ["query", "result", "records"],
    "properties": {
        "query": _OBJECT,
        "result": _QUERY_RESULT,
        "records": {"type": "array", "items": SERVED_RECORD},
    },
}

_COVERAGE = {
    "type": "object",
    "required": ["query", "scoped_pool", "store_total", "by_reach", "by_type", "by_dsl"],
    "properties": {
        "query": _OBJECT,
        "scoped_pool": _COUNT,
        "store_total": _COUNT,
        "by_reach": {"type": "object", "additionalProperties": _COUNT},
        "by_type": {"type": "object", "additionalProperties": _COUNT},
        "by_dsl": {"type": "object", "additionalProperties": _COUNT},
        "reading": _STRING,
    },
}

QUERY = {"type": "object", "anyOf": [_ANSWER, _COVERAGE]}

_CODE = {
    "type": ["object", "null"],
    "required": ["kind", "text"],
    "properties": {"kind": {"enum": ["diff", "source"]}, "text": _STRING,
                   "dispatch": _TEXT_OR_NULL},
}  # fmt: skip

_RANK = {
    "type": "object",
    "required": ["rank", "id", "speedup", "bench_key", "comparable", "alternates"],
    "properties": {
        "rank": {"type": "integer", "minimum": 1},
        "id": _STRING,
        "speedup": {"type": ["number", "null"]},
        "bench_key": _TEXT_OR_NULL,
        "comparable": {"type": ["boolean", "null"]},
        "retire_hint": _TEXT_OR_NULL,
        "code": _CODE,
        "reference": _TEXT_OR_NULL,
        "alternates": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": _STRING, "code": _CODE},
            },
        },  # fmt: skip
    },
}

READ_REASONS = ("read", "missing_arch", "kernel_not_found", "ambiguous", "no_same_arch",
                "no_same_language", "all_retired", "reference_only", "below_min_speedup",
                "no_code", "corrupt_records")  # fmt: skip

RESOLVE = {
    "type": "object",
    "required": ["read_reason", "commit", "kernel", "hardware", "options", "counts", "ranks",
                 "reference_only"],
    "properties": {
        "read_reason": {"enum": list(READ_REASONS)},
        "commit": _COMMIT,
        "kernel": _OBJECT,
        "hardware": {"type": ["object", "null"]},
        "options": _OBJECT,
        "counts": {"type": "object", "additionalProperties": _COUNT},
        "ranks": {"type": "array", "items": _RANK},
        "reference_only": {
            "type": "array",
            "items": {"type": "object", "required": ["id", "reason"],
                      "properties": {"id": _STRING, "reason": _STRING,
                                     "reference": _TEXT_OR_NULL}},
        },
        "budget": {
            "type": "object",
            "required": ["max_bytes", "omitted"],
            "properties": {
                "max_bytes": {"type": "integer"},
                "omitted": {"type": "array", "items": {
                    "type": "object", "required": ["id", "field"],
                    "properties": {"id": _STRING, "field": {"enum": ["code", "reference"]}}}},
            },
        },
    },
}  # fmt: skip

VOCABULARY = {
    "type": "object",
    "required": ["name", "values", "free_text"],
    "properties": {
        "name": _STRING,
        "values": {"type": "array", "items": _STRING},
        "free_text": {"type": "array", "items": _STRING},
    },
}

FEEDBACK = {
    "type": "object",
    "required": ["action", "record_id", "path", "commit", "note"],
    "properties": {
        "action": {"const": "feedback"},
        "record_id": _STRING,
        "path": _TEXT_OR_NULL,
        "commit": _COMMIT,
        "note": _STRING,
    },
}

ATTEST = {
    "type": "object",
    "required": ["record", "outcome", "commit", "ledger", "counts", "retire_hint"],
    "properties": {
        "record": _STRING,
        "outcome": {"enum": list(ATTEST_OUTCOMES)},
        "commit": _STRING,
        "ledger": _STRING,
        "counts": _OBJECT,
        "retire_hint": _TEXT_OR_NULL,
    },
}
