"""Trace gate `journal-provenance` (gitkb's own): a granular long-horizon record is
backed by the episode's journal in the trace.

A record is granular when it carries ``evidence.raw.evidence_extra``, or when the commit
it cites is a long-horizon promotion (``episode <E>: promote ...``) or revalidation
(``v<N>: long-horizon episode <E> <status>``): leaving the citation out is a failure, not
an exemption. The citation is:

    {"journal": "memory/long_horizon_e0003.json",     # or an archived journal.json
     "evidence_files": ["..."],                        # optional further evidence
     "experiments": [2, 3],                            # 1-based journal positions
     "promotion_commit": "<sha>"}                      # or "revalidation_commit"

The journal must be a file of the trace (read from the store's
``refs/kb/traces/<label>``: at the record's ``git_commit`` when it holds the
file, else at the trace's tip); every experiment the record declares must be in
it; the promotion or revalidation commit must be a commit of the trace. Paths are
relative to the trace root: absolute paths, ``..``, symlinks, a file over 8 MiB
and evidence over 32 MiB in total are refused from the tree entries and object
headers alone, before any content is read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitkb.gates import Finding, Gate, GateContext, setting
from gitkb.gates.trace_evidence import (
    evidence,
    first_mined,
    label_of,
    mined_records,
    raw_of,
    reachable,
    require_traces,
    trace_repo,
    trace_tip,
)
from gitkb.trace.messages import long_horizon_commit

if TYPE_CHECKING:
    from gitkb.vcs.repository import Repository

NAME = "journal-provenance"
FIELD = "evidence.raw.evidence_extra"
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 32 * 1024 * 1024
COMMIT_KEYS = ("promotion_commit", "revalidation_commit")
OMITTED = (
    "cites a long-horizon {kind} commit but no journal: a record of a promotion or "
    "revalidation must name the episode's evidence"
)


def evidence_extra(data: dict) -> object:
    return raw_of(data).get("evidence_extra")


def _declares(data: dict) -> bool:
    return "evidence_extra" in raw_of(data)


def cited_kind(ctx: GateContext, data: dict) -> str | None:
    """``promotion`` or ``revalidation`` when the record's commit is such a long-horizon
    commit of its trace (read from the trace's own objects), else None."""
    label, commit = label_of(data), raw_of(data).get("git_commit")
    if label is None or not isinstance(commit, str) or not commit:
        return None
    tip, _ = trace_tip(ctx, label)
    if tip is None or commit not in reachable(ctx, label):
        return None  # provenance reports a commit the trace does not hold
    packet = evidence(ctx, data).packet
    if packet is not None and packet.provenance.get("git_commit") == commit:
        # The packet was built from the same commit's subject by the same rule.
        extra = packet.evidence_extra or {}
        return next((k.removesuffix("_commit") for k in COMMIT_KEYS if k in extra), None)
    return long_horizon_commit(trace_repo(ctx, label).commit(commit).subject)


def path_problem(path: object) -> str | None:
    """Why a cited path is refused on its face, or None."""
    if not isinstance(path, str) or not path.strip():
        return f"{path!r} is not a path"
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        return f"{path} is absolute; evidence paths are relative to the trace root"
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        return f"{path} leaves the trace root (..)"
    if any(p in ("", ".") for p in parts):
        return f"{path} is not a plain relative path"
    return None


def check(ctx: GateContext) -> Iterator[Finding]:
    records = mined_records(ctx, also=_declares)
    require_traces(ctx)
    for record_file, data in records:
        if _declares(data):
            problems = list(_problems(ctx, data))
        elif kind := cited_kind(ctx, data):
            problems = [(FIELD, OMITTED.format(kind=kind))]
        else:
            continue
        for field, message in problems:
            yield Finding(record_file.id, NAME, message, field)


def _problems(ctx: GateContext, data: dict) -> Iterator[tuple[str, str]]:
    extra = evidence_extra(data)
    label = label_of(data)
    if not isinstance(extra, dict):
        yield FIELD, "is not an object"
        return
    if label is None:
        yield "evidence.raw.source_repo", "long-horizon evidence without a trace to find it in"
        return
    tip, problem = trace_tip(ctx, label)
    if tip is None:
        yield "evidence.raw.source_repo", problem
        return
    commits = reachable(ctx, label)
    repo = trace_repo(ctx, label)

    canonical = [(k, extra[k]) for k in COMMIT_KEYS if extra.get(k)]
    if not canonical:
        yield FIELD, "names no promotion_commit or revalidation_commit"
    for key, sha in canonical:
        if not isinstance(sha, str) or sha not in commits:
            yield f"{FIELD}.{key}", f"{sha} is not a commit of trace {label}"

    journal = extra.get("journal")
    if journal is None:
        yield f"{FIELD}.journal", "cites no journal or archived evidence file"
        return
    others = extra.get("evidence_files") or []
    if not isinstance(others, list):
        yield f"{FIELD}.evidence_files", "is not a list of paths"
        others = []
    cited = [(f"{FIELD}.journal", journal)] + [
        (f"{FIELD}.evidence_files[{i}]", p) for i, p in enumerate(others)
    ]
    cited_commit = raw_of(data).get("git_commit")
    at = [c for c in (cited_commit, tip) if isinstance(c, str) and c in commits]
    # Every refusal is decided from tree entries and object headers, before any read.
    located, total, refused = {}, 0, False
    for field, path in cited:
        reason = path_problem(path)
        if reason is None:
            commit, reason = _locate(repo, at, path)
            if reason is None:
                size = repo.blob_size(repo.blob_sha(commit, path))
                if size > MAX_FILE_BYTES:
                    reason = f"{path} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit"
                total += size
                located[field] = (commit, path)
        if reason is not None:
            refused = True
            yield field, reason
    if total > MAX_TOTAL_BYTES:
        yield FIELD, f"cited evidence is {total} bytes, over the {MAX_TOTAL_BYTES}-byte limit"
        return
    if refused or f"{FIELD}.journal" not in located:
        return

    commit, path = located[f"{FIELD}.journal"]
    experiments = extra.get("experiments") or []
    if not isinstance(experiments, list):
        yield f"{FIELD}.experiments", "is not a list of experiment ids"
        return
    known = journal_experiments(repo.read(commit, path))
    if known is None:
        yield f"{FIELD}.journal", f"{path} holds no journal (no experiments list)"
        return
    for i, experiment in enumerate(experiments):
        if isinstance(experiment, bool) or experiment not in known:
            yield (
                f"{FIELD}.experiments[{i}]",
                f"experiment {experiment!r} is not in {path} ({len(known)} experiments)",
            )


def _locate(repo: Repository, commits: list[str], path: str) -> tuple[str | None, str | None]:
    """The first commit holding ``path`` as a regular file; a symlink anywhere on the way
    is refused (it could point out of the trace)."""
    parts = path.split("/")
    for commit in commits:
        for depth in range(1, len(parts) + 1):
            if repo.is_symlink(commit, "/".join(parts[:depth])):
                return None, f"{path} goes through a symlink; refused, it may leave the trace"
        if repo.blob_sha(commit, path) is not None:
            return commit, None
    return None, f"{path} is not a file of the trace"


def journal_experiments(raw: bytes | None) -> set[int] | None:
    """The experiment ids a journal holds: a ``journal.json`` or an archived episode record
    (``memory/long_horizon_e<E>.json``, journal under ``journal``) numbers them by 1-based
    position; canonical memory (``memory/v<N>.json``, under ``experience``) by ``index``."""
    try:
        document = json.loads(raw or b"")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(document, dict):
        return None
    for holder in ("journal", "experience"):
        if isinstance(document.get(holder), dict):
            document = document[holder]
            break
    experiments = document.get("experiments")
    if not isinstance(experiments, list):
        return None
    ids = set()
    for position, entry in enumerate(experiments, start=1):
        index = entry.get("index") if isinstance(entry, dict) else None
        ids.add(index if isinstance(index, int) and not isinstance(index, bool) else position)
    return ids


def _granular(ctx: GateContext) -> dict | None:
    record_file = first_mined(ctx, lambda data: isinstance(evidence_extra(data), dict))
    extra = None if record_file is None else evidence_extra(record_file.data)
    return extra if isinstance(extra, dict) else None


GATE = Gate(
    NAME,
    "trace",
    "granular long-horizon records cite a journal of the trace that backs them",
    check,
)


@GATE.edit("unknown-experiment", _granular)
def _unknown_experiment(extra: dict) -> None:
    extra["experiments"] = [*(extra.get("experiments") or []), 9999]


@GATE.case("omitted-journal")
def _omitted_journal(ctx: GateContext) -> bool:
    """A distiller that drops the citation from a record of a promotion."""
    record_file = first_mined(ctx, lambda data: isinstance(evidence_extra(data), dict))
    if record_file is None:
        return False
    del record_file.data["evidence"]["raw"]["evidence_extra"]
    return True


@GATE.edit("unresolved-promotion", _granular)
def _unresolved_promotion(extra: dict) -> None:
    for key in COMMIT_KEYS:
        extra.pop(key, None)
    extra["promotion_commit"] = "0" * 40


GATE.add("missing-journal", setting(_granular, "journal", "memory/long_horizon_e9999.json"))
GATE.add("absolute-path", setting(_granular, "journal", "/etc/passwd"))
GATE.add("traversal", setting(_granular, "journal", "memory/../../outside.json"))
