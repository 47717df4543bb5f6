"""Trace gate `provenance`: a mined record's commit is a commit of its trace, in this store.

``evidence.raw.git_commit`` must name a commit reachable from
``refs/kb/traces/<source_repo>`` in the store (gitkb's rule 8: any other object,
or a commit the trace does not hold, does not count). When the run names the
trace it is mining (``ctx.trace_label``), ``source_repo`` must equal it.
A record that cites a trace commit without naming its trace is reported too."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitkb.gates import Finding, Gate, GateContext, setting
from gitkb.gates.trace_evidence import (
    first_mined,
    label_of,
    mined_records,
    raw_of,
    reachable,
    require_traces,
    trace_repo,
    trace_tip,
)

if TYPE_CHECKING:
    from gitkb.record import RecordFile

NAME = "provenance"
_SHA = re.compile(r"[0-9a-f]{40}")
UNKNOWN_COMMIT = "0" * 40


def _cites_commit(data: dict) -> bool:
    return bool(raw_of(data).get("git_commit"))


def check(ctx: GateContext) -> Iterator[Finding]:
    records = mined_records(ctx, also=_cites_commit)
    require_traces(ctx)
    expected_label = ctx.trace_label
    for record_file, data in records:
        label, commit = label_of(data), raw_of(data).get("git_commit")
        if label is None:
            yield Finding(
                record_file.id,
                NAME,
                "cites a trace commit but names no trace",
                "evidence.raw.source_repo",
            )
            continue
        if expected_label and label != expected_label:
            yield Finding(
                record_file.id,
                NAME,
                f"names trace {label}, but this run mines {expected_label}",
                "evidence.raw.source_repo",
            )
        if not commit:
            yield Finding(record_file.id, NAME, "names no commit", "evidence.raw.git_commit")
            continue
        tip, problem = trace_tip(ctx, label)
        if tip is None:
            yield Finding(record_file.id, NAME, problem, "evidence.raw.source_repo")
            continue
        if not isinstance(commit, str) or commit not in reachable(ctx, label):
            repo = trace_repo(ctx, label)
            kind = repo.object_type(commit) if _SHA.fullmatch(str(commit)) else None
            what = {
                None: "is not an object in the store",
                "commit": "is a commit the trace does not reach",
            }.get(kind, f"is a {kind}, not a commit")
            yield Finding(
                record_file.id,
                NAME,
                f"{commit} {what} (trace {label})",
                "evidence.raw.git_commit",
            )


def _first(ctx: GateContext) -> RecordFile | None:
    return first_mined(ctx, lambda data: bool(raw_of(data).get("git_commit")))


def _raw(ctx: GateContext) -> dict | None:
    record_file = _first(ctx)
    return None if record_file is None else record_file.data["evidence"]["raw"]


GATE = Gate(
    NAME,
    "trace",
    "git_commit is a commit of the record's trace (refs/kb/traces/<source_repo>)",
    check,
)


@GATE.case("commit-outside-trace")
def _commit_outside_trace(ctx: GateContext) -> bool:
    """A real commit of the store (its main), which the trace does not hold."""
    record_file = _first(ctx)
    if record_file is None or ctx.store is None:
        return False
    record_file.data["evidence"]["raw"]["git_commit"] = ctx.store.tip
    return True


@GATE.case("blob-not-commit")
def _blob_not_commit(ctx: GateContext) -> bool:
    """An object the trace holds that is not a commit: a file at the cited commit."""
    record_file = _first(ctx)
    if record_file is None or ctx.store is None:
        return False
    raw = record_file.data["evidence"]["raw"]
    repo = ctx.store.repo
    if repo.object_type(raw["git_commit"]) != "commit":
        return False
    first_file = next(repo.list_tree(raw["git_commit"]), None)
    if first_file is None:
        return False
    raw["git_commit"] = first_file[1]
    return True


@GATE.case("label-mismatch")
def _other_trace_label(ctx: GateContext) -> bool:
    ctx.trace_label = "kernel_opt_998_another_trace"
    return _first(ctx) is not None


GATE.add("unknown-commit", setting(_raw, "git_commit", UNKNOWN_COMMIT))
GATE.add("trace-not-in-store", setting(_raw, "source_repo", "kernel_opt_999_never_mined"))
GATE.add("source-repo-dropped", setting(_raw, "source_repo", None))
