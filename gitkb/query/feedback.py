"""Feedback: what happened when an agent used a record, as an append-only event log.

``feedback/<id>.jsonl`` holds one JSON line per event. The store's
``.gitattributes`` merges these files with git's union driver and the server hook
lets them only grow (as ledgers), so two clones reporting at once never conflict
and nothing is rewritten. An event is idempotent per key: the first line with a
key counts, a repeat adds nothing (``trace:<label>@<commit>`` when the outcome
came from a trace's version, else ``by:<who>``, one voice per reporter).

Ranking folds the events into the counters it reads, never into the record: the
record's own ``worth.track.counters`` plus the events' counts, scored by the
store's rule (docs/record-format.md §9: ``gitkb.record.worth``) with the recency decay of
the feedback rebuilder (half-life 90 days from the last event). The gates see no
record change, because there is none.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitkb import record as rec
from gitkb.errors import GitkbError, echoed
from gitkb.layout import FEEDBACK_DIR, feedback_path
from gitkb.query.scope import RETIRED_STATUSES
from gitkb.record.values import json_number
from gitkb.record.worth import rank, recency_decay
from gitkb.vcs.plain import identity
from gitkb.warmstart.attest import appended, one_line, parse_ledger

# type-only: the write path loads dulwich, and ``builder`` imports it when it runs
if TYPE_CHECKING:
    from gitkb.store.store import Store
    from gitkb.store.view import StoreView
    from gitkb.store.writer import Admission, Builder, Change

OUTCOMES = ("helped", "no-effect", "misleading")
COUNTER_NAMES = rec.COUNTERS
# outcome -> the counters one event adds
_COUNTS = {
    "helped": {"applied_count": 1, "verified_effective": 1},
    "no-effect": {"applied_count": 1, "verified_ineffective": 1},
    "misleading": {"applied_count": 1, "verified_ineffective": 1},
}
SOURCE = "gitkb-feedback"
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_SHA = re.compile(r"[0-9a-f]{7,64}")


@dataclass
class Folded:
    """A record's feedback folded: the counters its events add, when, and the outcomes."""

    counts: dict[str, int] = field(default_factory=dict)
    first_ts: float | None = None
    last_ts: float | None = None
    outcomes: dict[str, int] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # key -> its outcome
    bad_lines: int = 0


def fold(raw: bytes | None) -> Folded:
    """The events of one feedback file folded, never raising: increments count once per
    key (the first line wins), a snapshot replaces its source's earlier snapshot, lines
    that are not JSON objects are counted and skipped."""
    log = parse_ledger(FEEDBACK_DIR, raw)
    folded = Folded(bad_lines=len(log.bad_lines))
    snapshots: dict[str, dict] = {}
    increments: dict[str, dict] = {}
    for event in log.events:
        ts = json_number(event.get("ts"))
        if ts is not None:
            folded.first_ts = ts if folded.first_ts is None else min(folded.first_ts, ts)
            folded.last_ts = ts if folded.last_ts is None else max(folded.last_ts, ts)
        if event.get("kind") == "snapshot":
            snapshots[str(event.get("source", ""))] = event
            continue
        key = event.get("key")
        key = key if isinstance(key, str) and key else json.dumps(event, sort_keys=True)
        increments.setdefault(key, event)
    for event in [*snapshots.values(), *increments.values()]:
        counts = event.get("counts") if isinstance(event.get("counts"), dict) else {}
        for name, value in counts.items():
            if name in COUNTER_NAMES and isinstance(value, int) and not isinstance(value, bool):
                folded.counts[name] = folded.counts.get(name, 0) + max(0, value)
        outcome = event.get("outcome")
        if isinstance(outcome, str):
            folded.outcomes[outcome] = folded.outcomes.get(outcome, 0) + 1
    for key, event in increments.items():
        if isinstance(event.get("outcome"), str):
            folded.keys[key] = event["outcome"]
    return folded


def folded_rank(record: dict, folded: Folded, now: float | None = None) -> tuple[float, str]:
    """(score, tier) of ``record`` with its feedback folded into its counters."""
    worth = record.get("worth") if isinstance(record.get("worth"), dict) else {}
    stored = rec.dig(worth, "rank", "score")
    if record.get("status") in RETIRED_STATUSES:
        # A retraction zeroed the score; feedback does not bring it back.
        return (json_number(stored) or 0.0), str(rec.dig(worth, "rank", "tier") or "")
    scored = copy.deepcopy(record)
    track = rec.object_at(scored, str(record.get("id")), "worth", "track")
    counters = track.get("counters") if isinstance(track.get("counters"), dict) else {}
    merged = {n: (json_number(counters.get(n)) or 0) for n in COUNTER_NAMES}
    for name, value in folded.counts.items():
        merged[name] += value
    track["counters"] = merged
    result = rank(scored)
    last = max(
        (t for t in (json_number(counters.get("last_used_ts")), folded.last_ts) if t is not None),
        default=None,
    )
    now = time.time() if now is None else now
    decay = recency_decay(last, now)
    return round(min(1.0, max(0.0, result["score"] * decay)), 4), result["tier"]


def key_for(trace: str | None, trace_commit: str | None, by: str) -> str:
    return f"trace:{trace}@{trace_commit}" if trace else f"by:{by}"


def _checked(record_id: str, outcome: str, trace: str | None, trace_commit: str | None) -> None:
    if outcome not in OUTCOMES:
        raise GitkbError(f"unknown outcome {echoed(outcome)}; use one of {', '.join(OUTCOMES)}", 2)
    if bool(trace) != bool(trace_commit):
        raise GitkbError("--trace and --trace-commit go together: the trace and its version", 2)
    if trace and (not _LABEL.fullmatch(trace) or ".." in trace):
        raise GitkbError(f"--trace {echoed(trace)} is not a trace label (letters, digits, ._/-)", 2)
    if trace_commit and not _SHA.fullmatch(trace_commit):
        raise GitkbError(f"--trace-commit {echoed(trace_commit)} is not a commit id (hex)", 2)
    if not rec.is_id(record_id):
        raise GitkbError(f"{echoed(record_id)} is not a record id", 2)


def event(
    record_id: str,
    outcome: str,
    key: str,
    by: str,
    trace: str | None = None,
    trace_commit: str | None = None,
) -> dict:
    """One feedback line (the GPU-wiki event shape: ts, record_id, kind, source, key,
    counts; and gitkb's outcome, reporter and trace)."""
    now = time.time()
    line = {
        "ts": round(now, 3),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "record_id": record_id,
        "kind": "increment",
        "source": SOURCE,
        "key": key,
        "outcome": outcome,
        "counts": dict(_COUNTS[outcome]),
        "by": by,
    }
    if trace:
        line.update(trace=trace, trace_commit=trace_commit)
    return line


def builder(
    record_id: str,
    outcome: str,
    trace: str | None = None,
    trace_commit: str | None = None,
    by: str | None = None,
) -> Builder:
    """The store write (a ``Change`` builder) that appends one feedback event, or nothing
    when its key already holds that outcome."""
    from gitkb.store.writer import Change

    _checked(record_id, outcome, trace, trace_commit)
    who = one_line(by) if by and by.strip() else identity()
    key = key_for(trace, trace_commit, who)

    def build(view: StoreView) -> Change:
        if record_id not in view:
            raise GitkbError(f"no record {echoed(record_id)} in {view.location}")
        path = feedback_path(record_id)
        raw = view.read_files([path]).get(path)
        held = fold(raw).keys.get(key)
        if held == outcome:
            return Change("feedback", record_id, {}, path=path, note=f"already recorded ({key})")
        if held is not None:
            raise GitkbError(
                f"{record_id}: feedback {key} already says {held!r}; one key records one "
                "outcome (the log is append-only)"
            )
        line = event(record_id, outcome, key, who, trace, trace_commit)
        data = appended(parse_ledger(path, raw), True, line)
        trailers = [("KB-Outcome", outcome), ("KB-Feedback-Key", key), ("KB-By", who)]
        if trace:
            trailers += [("KB-Trace", trace), ("KB-Trace-Commit", trace_commit)]
        return Change(
            "feedback",
            record_id,
            {path: data},
            path=path,
            body=f"Outcome {outcome} for {record_id}, reported by {who}"
            + (f" (trace {trace} at {trace_commit[:12]})." if trace else "."),
            trailers=trailers,
            note=key,
        )

    return build


def feedback(
    store: Store,
    record_id: str,
    outcome: str,
    trace: str | None = None,
    trace_commit: str | None = None,
    by: str | None = None,
) -> Admission:
    """Append one feedback event to the record's log: one ``feedback`` commit, or none when
    its key is already recorded."""
    return store.commit([builder(record_id, outcome, trace, trace_commit, by)])[0]


def summary(store: Store, record_id: str) -> dict:
    """A record's feedback as counted: outcomes, the counters it adds, unreadable lines."""
    view = store.view()
    if record_id not in view:
        raise GitkbError(f"no record {echoed(record_id)} in {store.location}")
    path = feedback_path(record_id)
    folded = fold(view.read_files([path]).get(path))
    return {
        "record": record_id,
        "path": path,
        "outcomes": folded.outcomes,
        "counts": folded.counts,
        "unreadable_lines": folded.bad_lines,
    }
