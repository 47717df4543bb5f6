"""Store gate `raw-isolation` (spec 4.4): nothing of ``evidence.raw`` or the engine-only
blocks reaches what an agent is served.

The served form is the contract projection of spec 3(a), ``served(record)``. The
gate serialises it once per record and looks for engine-only names and for the
raw provenance values (repository, checkout file, commit, file paths) in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from gitkb.gates import Finding, Gate, GateContext
from gitkb.gates.anonymization import child_path

NAME = "raw-isolation"

ENGINE_ONLY_RETRIEVAL_KEYS = ("locator", "links")
# Quoted tokens: a key with that name anywhere in the served JSON, or a string value equal to it.
FORBIDDEN_TOKENS = ("locator", "links", "raw")
ECHOED_RAW_KEYS = ("source_repo", "detail_file", "git_commit")
SERVED_WORTH_KEYS = frozenset({"gain", "rank"})
SERVED_RANK_KEYS = frozenset({"score", "tier"})


def served(record: dict) -> dict:
    """The contract projection (spec 3a) of a record: what the served answer may contain.

    ``id``, ``type``, ``level``; ``retrieval`` without ``locator`` and ``links``;
    ``payload`` unchanged; ``evidence`` as ``{summary}``; ``worth`` as
    ``{rank: {score, tier}}`` plus ``gain`` when the record has one. Wrong-typed
    blocks are passed through or read as empty; this never raises.
    """
    retrieval = record.get("retrieval")
    if isinstance(retrieval, dict):
        retrieval = {k: v for k, v in retrieval.items() if k not in ENGINE_ONLY_RETRIEVAL_KEYS}
    evidence = record.get("evidence")
    worth = record.get("worth") if isinstance(record.get("worth"), dict) else {}
    rank = worth.get("rank") if isinstance(worth.get("rank"), dict) else {}
    served_worth: dict = {"rank": {"score": rank.get("score"), "tier": rank.get("tier")}}
    if "gain" in worth:
        served_worth["gain"] = worth["gain"]
    return {
        "id": record.get("id"),
        "type": record.get("type"),
        "level": record.get("level"),
        "retrieval": retrieval,
        "payload": record.get("payload"),
        "evidence": {"summary": evidence.get("summary") if isinstance(evidence, dict) else None},
        "worth": served_worth,
    }


def served_text(projection: dict) -> str:
    """A projection as the JSON text the gate searches: default separators, non-ASCII kept."""
    return json.dumps(projection, ensure_ascii=False, default=str)


def _paths(node: object, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, key or string value) for every key and every string value below ``node``."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield child_path(path, key), key
            yield from _paths(value, child_path(path, key))
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from _paths(value, child_path(path, position))


def _where_token(projection: dict, token: str) -> str:
    """The first key or string whose JSON form holds the quoted token: one equal to it, or
    one ending in a quote and the token (JSON writes that quote as \\", the closing one as ")."""
    quoted_tail = '"' + token
    return next(
        (path for path, text in _paths(projection) if text == token or text.endswith(quoted_tail)),
        "",
    )


def _where_contained(projection: dict, needle: str) -> str:
    return next((path for path, text in _paths(projection) if needle in text), "")


def _raw_block(record: dict) -> dict:
    evidence = record.get("evidence")
    raw = evidence.get("raw") if isinstance(evidence, dict) else None
    return raw if isinstance(raw, dict) else {}


def _forbidden_tokens(record_id: str, projection: dict, text: str) -> Iterator[Finding]:
    for token in FORBIDDEN_TOKENS:
        if f'"{token}"' in text:
            where = _where_token(projection, token)
            yield Finding(
                record_id,
                NAME,
                f"the served record holds the name {token!r} at {where or '?'}; "
                "locator, links and raw must never be served",
                where,
            )


def _worth_shape(record_id: str, projection: dict) -> Iterator[Finding]:
    worth = projection["worth"]
    if set(worth) != SERVED_WORTH_KEYS:
        yield Finding(
            record_id,
            NAME,
            "served worth is not exactly {gain, rank}: worth.gain is missing",
            "worth",
        )
    if set(worth["rank"]) != SERVED_RANK_KEYS:
        yield Finding(
            record_id, NAME, "served worth.rank is not exactly {score, tier}", "worth.rank"
        )


def _echoed_raw_values(record_id: str, projection: dict, text: str, raw: dict) -> Iterator[Finding]:
    for key in ECHOED_RAW_KEYS:
        value = raw.get(key)
        if value and str(value) in text:
            where = _where_contained(projection, str(value))
            yield Finding(
                record_id,
                NAME,
                f"evidence.raw.{key} {str(value)!r} is echoed in the served record"
                + (f" at {where}" if where else ""),
                where or f"evidence.raw.{key}",
            )


def _echoed_file_paths(record_id: str, projection: dict, text: str, raw: dict) -> Iterator[Finding]:
    file_paths = raw.get("file_paths")
    if not isinstance(file_paths, list):
        return
    for position, entry in enumerate(file_paths):
        if not isinstance(entry, str) or entry not in text:
            continue
        if entry == "":
            message = "evidence.raw.file_paths has an empty entry (it matches every served record)"
            where = ""
        else:
            where = _where_contained(projection, entry)
            message = f"evidence.raw.file_paths entry {entry!r} is echoed in the served record" + (
                f" at {where}" if where else ""
            )
        yield Finding(record_id, NAME, message, where or f"evidence.raw.file_paths[{position}]")


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file, record in ctx.parsed():
        projection = served(record)
        text = served_text(projection)
        raw = _raw_block(record)
        record_id = record_file.id
        yield from _forbidden_tokens(record_id, projection, text)
        yield from _worth_shape(record_id, projection)
        yield from _echoed_raw_values(record_id, projection, text, raw)
        yield from _echoed_file_paths(record_id, projection, text, raw)


# --- injection cases ----------------------------------------------------------------------


def _with_provenance(ctx: GateContext) -> dict:
    """The first record, given the trace provenance a mined record carries."""
    record = ctx.records[0].data
    record["evidence"]["raw"].update(
        source_repo="kernel_opt_softmax_triton_h100", version="v4", git_commit="5b0d2e7a" * 5
    )
    return record


GATE = Gate(
    NAME, "store", "served records hold no evidence.raw value or engine-only key", check, alone=True
)


@GATE.case("commit-in-observed")
def _commit_in_observed(ctx: GateContext) -> bool:
    record = _with_provenance(ctx)
    commit = record["evidence"]["raw"]["git_commit"]
    record["payload"]["observed"] = f"Measured at commit {commit} of the trace."
    return True


@GATE.case("source-repo-in-trigger")
def _source_repo_in_trigger(ctx: GateContext) -> bool:
    record = _with_provenance(ctx)
    repo = record["evidence"]["raw"]["source_repo"]
    record["retrieval"]["triggers"].append(f"the kernel from {repo} regressed after the last step")
    return True


@GATE.case("empty-file-path")
def _empty_file_path(ctx: GateContext) -> bool:
    raw = ctx.records[0].data["evidence"].setdefault("raw", {})
    raw["file_paths"] = ["kernels/layernorm.py", ""]
    return True


@GATE.case("raw-key-in-shape-contract")
def _raw_key_in_shape_contract(ctx: GateContext) -> bool:
    problem = ctx.records[0].data["payload"]["problem"]
    problem["shape_contract"] = {"raw": "rows=4096 cols=16384 from the harness log"}
    return True


@GATE.case("missing-gain")
def _missing_gain(ctx: GateContext) -> bool:
    ctx.records[0].data["worth"].pop("gain", None)
    return True
