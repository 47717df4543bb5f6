"""The attestation ledger: ``ledger/<id>.jsonl``, one JSON line per outcome, append-only.

The store's ``.gitattributes`` merges ledgers with git's union driver, so two
machines attesting the same record at once never conflict. Counts are derived
from the lines; an attestation moves no ranking scalar (one failure on one box
is evidence, not a verdict). Retractions and un-retractions leave a line here
too, so the reason and what was zeroed stay next to the outcomes.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitkb import record as rec
from gitkb.errors import GitkbError, echoed
from gitkb.layout import ledger_path
from gitkb.record import strict
from gitkb.vcs.plain import identity

# type-only: the store and its write path load dulwich; the writes import it as they run
if TYPE_CHECKING:
    from gitkb.store.store import Store
    from gitkb.store.view import StoreView
    from gitkb.store.writer import Admission, Change

OUTCOMES = ("validated", "failed", "not_reproduced", "inapplicable")
# outcome -> the count it feeds
_COUNT_OF = {
    "validated": "validations",
    "failed": "failures",
    "not_reproduced": "not_reproduced",
    "inapplicable": "inapplicable",
}
_EVIDENCE_KEY = r"[A-Za-z0-9_.-]+"


@dataclass(slots=True)
class Ledger:
    """A record's ledger as read: its events, and the lines that were not JSON objects."""

    path: str
    raw: bytes = b""
    events: list[dict] = field(default_factory=list)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    def counts(self) -> dict:
        """recalls (attempts on hardware), validations, failures, not_reproduced,
        inapplicable, and the last outcome with when and by whom."""
        counts = {"recalls": 0, **{name: 0 for name in _COUNT_OF.values()}}
        last: dict = {}
        for event in self.events:
            if event.get("event") == "attest" and event.get("outcome") in _COUNT_OF:
                counts["recalls"] += 1
                counts[_COUNT_OF[event["outcome"]]] += 1
                last = event
            elif event.get("event") == "attest-counts" and isinstance(event.get("counts"), dict):
                # an imported tally whose individual outcomes are not kept
                for name in counts:
                    value = event["counts"].get(name)
                    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                        counts[name] += value
        counts["last_outcome"] = last.get("outcome")
        counts["last_at"] = last.get("at")
        counts["last_by"] = last.get("by")
        return counts

    def open_retraction(self) -> dict | None:
        """The retract event not yet lifted by an unretract, if any."""
        state = None
        for event in self.events:
            if event.get("event") == "retract":
                state = event
            elif event.get("event") == "unretract":
                state = None
        return state


def parse_ledger(path: str, raw: bytes | None) -> Ledger:
    """Parse ledger bytes without raising; unusable lines are kept on ``bad_lines``."""
    ledger = Ledger(path, raw or b"")
    for number, line in enumerate((raw or b"").splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = strict.loads(line, strict.MAX_LINE_BYTES)
        except strict.StrictError as exc:
            ledger.bad_lines.append((number, f"not JSON ({exc})"))
            continue
        if not isinstance(event, dict):
            ledger.bad_lines.append((number, "not a JSON object"))
            continue
        ledger.events.append(event)
    return ledger


def read_ledger(store: Store | StoreView, record_id: str, commit: str | None = None) -> Ledger:
    """The ledger of ``record_id`` in a store (at ``commit``, default its tip) or a store
    view, read from the index cache."""
    path = ledger_path(record_id)
    view = store.view(commit) if hasattr(store, "view") else store
    return parse_ledger(path, view.read_files([path]).get(path))


def retire_hint(counts: dict) -> str | None:
    """Advisory text naming the pattern that fired; nothing filters on it."""
    if counts.get("validations", 0) > 0:
        return None
    if counts.get("not_reproduced", 0) >= 2:
        return f"not reproduced {counts['not_reproduced']} times and never validated"
    attempts = counts.get("recalls", 0) - counts.get("inapplicable", 0)
    if attempts >= 3:
        return f"{attempts} attempts (inapplicable excluded) and no validation"
    return None


def event_line(event: str, **fields: object) -> dict:
    """A ledger event: kind, UTC time, then fields; the nonce keeps two otherwise identical
    lines distinct, so a union merge never folds two attestations into one."""
    return {
        "event": event,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **{k: v for k, v in fields.items() if v is not None},
        "nonce": os.urandom(6).hex(),  # secrets.token_hex's bytes, without its imports
    }


def appended(ledger: Ledger, strict: bool, *events: dict) -> bytes:
    """The ledger's bytes with ``events`` appended; ``strict`` refuses a ledger with bad lines."""
    if strict and ledger.bad_lines:
        number, why = ledger.bad_lines[0]
        raise GitkbError(
            f"{ledger.path} line {number} is {why}; repair the ledger before appending to it"
        )
    raw = ledger.raw
    if raw and not raw.endswith(b"\n"):
        raw += b"\n"
    lines = b"".join(
        json.dumps(e, ensure_ascii=False, sort_keys=False).encode() + b"\n" for e in events
    )
    return raw + lines


def parse_evidence(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``K=V`` strings -> a dict; a malformed pair is an error naming it."""
    evidence: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not re.fullmatch(_EVIDENCE_KEY, key):
            raise GitkbError(
                f"evidence {echoed(pair)} is not KEY=VALUE (key: A-Z a-z 0-9 _ . -)", 2
            )
        evidence[key] = value
    return evidence


def one_line(text: str) -> str:
    """Text fit for a trailer value."""
    return " ".join(str(text).split())


def attest(
    store: Store,
    record_id: str,
    outcome: str,
    by: str | None = None,
    evidence: dict[str, str] | None = None,
) -> Admission:
    """Append one outcome to the record's ledger as an ``attest`` admission (one commit)."""
    if outcome not in OUTCOMES:
        raise GitkbError(f"unknown outcome {echoed(outcome)}; use one of {', '.join(OUTCOMES)}", 2)
    who = one_line(by) if by and by.strip() else identity()

    from gitkb.store.writer import Change

    def build(view: StoreView) -> Change:
        if record_id not in view:
            raise GitkbError(f"no record {echoed(record_id)} in {store.location}")
        ledger = read_ledger(view, record_id)
        line = event_line("attest", outcome=outcome, by=who, evidence=evidence or None)
        data = appended(ledger, True, line)
        hint = retire_hint(parse_ledger(ledger.path, data).counts())
        return Change(
            "attest",
            record_id,
            {ledger.path: data},
            path=ledger.path,
            body=f"Outcome {outcome} on {record_id}, reported by {who}."
            + (f"\nRetire hint: {hint}." if hint else ""),
            trailers=[("KB-Outcome", outcome), ("KB-By", who)],
            note=f"retire hint: {hint}" if hint else "",
        )

    return store.commit([build])[0]


def attested(
    store: Store, record_id: str, outcome: str, by: str | None = None,
    evidence: dict[str, str] | None = None,
) -> dict:  # fmt: skip
    """``attest``, then the ledger as that commit left it: what ``git kb attest`` prints
    (and the MCP ``attest`` tool answers)."""
    admission = attest(store, record_id, outcome, by, evidence)
    counts = read_ledger(store, record_id, admission.commit).counts()
    return {
        "record": record_id,
        "outcome": outcome,
        "commit": admission.commit,
        "ledger": admission.path,
        "counts": counts,
        "retire_hint": retire_hint(counts),
    }


def confirm_change(
    view: StoreView, record_id: str, keys: list[str], body: str, trailers: list[tuple[str, str]]
) -> Change:
    """The ``confirm`` change counting each of ``keys`` once on ``record_id``
    (``worth.track.confirm_keys``), the record otherwise unchanged; an empty change when
    every key is counted already."""
    from gitkb.store.admission import count_confirmation
    from gitkb.store.writer import Change

    held = view.read_record(record_id)
    if held.data is None:
        raise GitkbError(f"{record_id} is unreadable ({held.error}); not confirmed")
    counted = [c for c in (count_confirmation(held.data, key) for key in keys) if c is not None]
    if not counted:
        return Change("confirm", record_id, {}, held.path, note="already counted, skipped")
    return Change(
        "confirm",
        record_id,
        {held.path: rec.dumps(held.data)},
        held.path,
        body,
        trailers,
        f"verified_effective is now {counted[-1]}",
    )


def confirm_adoption(store: Store, record_id: str, trace: str, trace_commit: str) -> Admission:
    """Count a run that adopted ``record_id``'s code (and validated it on its box) as one
    confirmation of the record: one ``confirm`` commit, counted once per trace and commit
    (``worth.track.confirm_keys``), the record otherwise unchanged. Adopting store code is
    evidence for that record, never a new one."""

    def build(view: StoreView) -> Change:
        return confirm_change(
            view,
            record_id,
            [f"{trace}@{trace_commit}"],
            f"Adopted by the warm start of run {trace} and validated there: the store's code "
            "reproduced on another run, so it confirms this record (no new record).",
            [("KB-Confirmed-By", trace), ("KB-Trace", trace), ("KB-Trace-Commit", trace_commit)],
        )

    return store.commit([build])[0]
