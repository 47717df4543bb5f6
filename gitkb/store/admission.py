"""How an incoming record enters the store: insert, confirm, conflict or reproduction.

One policy for every caller (``git kb admit``, mining, imports, the optimizer's
write-back), decided under the writer lock against the store as it stands:

* the same code (content signature) on the same page is a *reproduction*: it
  confirms the record holding it, or is queued as a *conflict* when its gain
  points the other way (+22% there, -8% here is a contradiction, not a
  confirmation); a retracted holder stays retracted;
* with ``auto`` (mining), a record sharing an episode key with a stored one
  confirms it, or conflicts when the gains contradict, unless both carry code
  and the code differs: different code is a different record, whatever its key;
  the same evidence (trace and version) again is nothing new;
* otherwise an insert, refused when the id is taken.

A confirmation counts once per confirming evidence (``worth.track.confirm_keys``,
keyed by trace label and trace commit), so re-mining counts nothing twice.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from gitkb import layout
from gitkb import record as rec
from gitkb.errors import AdmissionRefused, GitkbError, RecordError
from gitkb.gates import Finding, GateContext, GateResult, run_gates
from gitkb.gates.registry import record_level
from gitkb.record import strict
from gitkb.record.signature import content_signature
from gitkb.store.config import max_record_bytes
from gitkb.store.request import AdmitRequest, parse
from gitkb.store.screening import Screened, Screening
from gitkb.store.view import StoreView
from gitkb.store.writer import Admission, Builder, Change

ACTIONS = ("insert", "confirm", "conflict")
AUTO = "auto"  # the policy decides (mining)
RETIRED_STATUS = "deprecated"

_CONFLICT_HINTS = [
    "the two measurements cover different shape sets",
    "the preconditions or the builds_on approach differ",
    "the hardware batch, driver or toolchain differs",
    "one side was mismeasured",
]


@dataclass(frozen=True)
class Decision:
    action: str  # insert, confirm, conflict; confirm with ``nothing`` writes nothing
    target: str | None = None
    note: str = ""
    reproduction: str | None = None  # the shared content signature
    nothing: bool = False


# ----------------------------------------------------------------- gates


def check_record(
    view: StoreView | None,
    record: dict,
    path: str,
    action: str = "insert",
    raw: bytes = b"",
    verdicts: Mapping[str, GateResult] | None = None,
) -> tuple[str, list[Finding]]:
    """The record-level gates on one record about to be admitted as ``action`` (``raw``:
    its bytes, when the caller has them; ``verdicts``: results of gates already run on
    it, by gate name): the KB-Gates figure and the findings."""
    ctx = GateContext(
        records=[rec.RecordFile(path, raw or rec.dumps(record), record)],
        store=view,
        admission=action,
    )
    gates = record_level()
    if verdicts:
        results = [verdicts.get(gate.name) or gate.run(ctx) for gate in gates]
    else:
        results = run_gates(ctx, gates)
    return gates_figure(results), [f for r in results for f in r.findings]


def gates_figure(results: list[GateResult]) -> str:
    ran = [r for r in results if r.status != "SKIP"]
    return f"{sum(r.status == 'PASS' for r in ran)}/{len(ran)}"


def refuse_findings(source: str, findings: list, record_id: str = "-") -> AdmissionRefused:
    lines = "\n".join(f.line() for f in findings[:20])
    more = f"\n... and {len(findings) - 20} more" if len(findings) > 20 else ""
    return AdmissionRefused(f"{source}: refused by the gates:\n{lines}{more}", findings, record_id)


# ----------------------------------------------------------------- the policy


def gain_sign(record: dict) -> str:
    """positive, negative or unknown: which way the record says its change went."""
    pct = rec.dig(record, "worth", "gain", "pct")
    if record.get("type") == "anti-strategy":
        return "negative"
    if isinstance(pct, (int, float)) and not isinstance(pct, bool):
        return "positive" if pct > 0 else "negative"
    if record.get("type") == "strategy":
        return "positive"
    return "unknown"


def contradicts(a: dict, b: dict) -> bool:
    known = {"positive", "negative"}
    return gain_sign(a) in known and gain_sign(b) in known and gain_sign(a) != gain_sign(b)


def _evidence(record: dict) -> tuple:
    raw = rec.dig(record, "evidence", "raw")
    raw = raw if isinstance(raw, dict) else {}
    return raw.get("source_repo"), raw.get("version")


def _same_evidence(a: dict, b: dict) -> bool:
    return _evidence(a)[0] is not None and _evidence(a) == _evidence(b)


def _scope_key(node: object) -> tuple:
    scope = rec.scope_of(node)
    return tuple(scope.get(k) for k in ("vendor", "arch", "dsl", "operator_family"))


def reproduction_of(view: StoreView, record: dict) -> str | None:
    """The record on ``record``'s page that holds the same code (content signature).

    Same signature and episode key (page and technique): that record. Failing that, a
    retracted record with the same signature in the same scope claims the code too, so
    taken-back code cannot come back under another name.
    """
    signature = content_signature(record)
    if signature is None:
        return None
    retracted = None
    for row in view.rows_with_signature(signature):
        entry = row.entry
        if entry is None or entry.get("type") != record.get("type") or row.id is None:
            continue
        if entry.get("episode_key") == record.get("episode_key"):
            return row.id
        if entry.get("status") == RETIRED_STATUS and _scope_key(entry) == _scope_key(record):
            retracted = retracted or row.id
    return retracted


def decide(view: StoreView, record: dict, request: AdmitRequest, path: str) -> Decision:
    """How ``record`` (filed at ``path``) enters the store as ``request`` asks."""
    action, target = request.action, request.target
    if action in ("confirm", "conflict"):
        if target not in view:
            raise AdmissionRefused(f"{action} target {target} is not in the store", [], target)
        return Decision(action, target)
    record_id = record["id"]
    rows = view.rows_of(record_id)
    if rows:
        held = view.read_row(rows[0]).data or {}
        if action == AUTO and _same_evidence(held, record):
            note = "same evidence already in the store; nothing to count"
            return Decision("confirm", record_id, note, nothing=True)
        if action != AUTO:
            raise AdmissionRefused(
                f"insert refused: {record_id} already exists ({rows[0].path})", [], record_id
            )
    twin = reproduction_of(view, record)
    if twin is not None and twin != record_id:
        held = view.read_record(twin).data or {}
        signature = content_signature(record)
        if _same_evidence(held, record):
            note = "same evidence already in the store; nothing to count"
            return Decision("confirm", twin, note, nothing=True)
        if contradicts(held, record):
            note = f"same code as {twin}, but its gain points the other way"
            return Decision("conflict", twin, note, signature)
        return Decision("confirm", twin, f"reproduction of {twin}", signature)
    key = record.get("episode_key")
    if action == AUTO and isinstance(key, str) and key:
        # Any type: a lever one trace kept and another reverted is a contradiction.
        for row in view.rows_with_episode_key(key):
            if row.id is None or row.entry is None:
                continue
            held = view.read_row(row).data or {}
            if _same_evidence(held, record):
                note = "same evidence already in the store; nothing to count"
                return Decision("confirm", row.id, note, nothing=True)
            theirs, ours = content_signature(held), content_signature(record)
            if theirs and ours and theirs != ours:
                continue  # different code is a different record
            verb = "conflict" if contradicts(held, record) else "confirm"
            return Decision(verb, row.id, f"episode key matches {row.id}")
    if rows:
        raise AdmissionRefused(
            f"insert refused: {record_id} already exists ({rows[0].path})", [], record_id
        )
    if view.holds_path(path):
        raise AdmissionRefused(f"insert refused: {path} already exists", [], record_id)
    return Decision("insert")


# ----------------------------------------------------------------- admitting


class Admitting(Protocol):
    """What admitting uses of a store (``gitkb.store.Store`` is one)."""

    def config(self, commit: str | None = None) -> dict: ...
    def commit(self, builds: list[Builder], on_refusal: str = "stop") -> list[Admission]: ...


def admit_many(
    store: Admitting, requests: list[AdmitRequest], on_refusal: str = "stop"
) -> list[Admission]:
    """Admit records in order, one commit each. A file that cannot be read stops the run
    before it; a refusal stops it there (``on_refusal="stop"``, the refusal's
    ``admitted`` lists what landed) or is reported and skipped (``"skip"``)."""
    limit = max_record_bytes(store.config())
    builds = []
    with Screening(requests, limit) as screening:
        try:
            for n, request in enumerate(requests):
                screened = screening.screener(n) if screening.working else None
                builds.append(builder(request, limit, screened))
        except GitkbError as exc:
            exc.admitted = store.commit(builds, on_refusal)
            raise
        return store.commit(builds, on_refusal)


# ----------------------------------------------------------------- building the change


def builder(
    request: AdmitRequest,
    max_bytes: int = strict.MAX_RECORD_BYTES,
    screened: Callable[[], Screened] | None = None,
) -> Builder:
    """Parse ``request`` now (a bad file, or one over ``max_bytes``, is refused before
    anything is written); decide, gate and build its change later, under the lock,
    against the store as it stands. With ``screened`` (a bulk admission's worker, see
    ``gitkb.store.screening``) the record comes parsed, and partly gated, from there
    when the build asks; a bad file then stops the run at the same record all the same."""
    if request.action not in (*ACTIONS, AUTO):
        raise GitkbError(f"unknown action {request.action!r}; use one of {', '.join(ACTIONS)}", 2)
    if request.action in ("confirm", "conflict") and not request.target:
        raise GitkbError(f"--target ID is required for {request.action}", 2)
    if screened is None:
        record, path = parse(request, max_bytes)
        screened = functools.partial(Screened, record, path, {})

    def build(view: StoreView) -> Change:
        screen = screened()
        record, path = screen.record, screen.path
        # The gates judge the record as asked for; "auto" leaves the id check to decide().
        gates, findings = check_record(
            view, record, path, request.action, request.raw, screen.verdicts
        )
        if findings:
            raise refuse_findings(request.source, findings, record["id"])
        decision = decide(view, record, request, path)
        provenance = [
            (k, v)
            for k, v in (
                ("KB-Trace", request.trace),
                ("KB-Trace-Commit", request.trace_commit),
                ("KB-Gates", gates),
            )
            if v
        ]
        if decision.nothing:
            change = Change("confirm", decision.target, {}, note=decision.note)
        elif decision.action == "insert":
            change = Change(
                "insert",
                record["id"],
                {path: request.raw},
                path,
                request.body,
                provenance,
                parsed={path: record},
                prepared={path: screen.prepared} if screen.prepared else {},
            )
        elif decision.action == "confirm":
            change = _confirm(view, record, decision, request, provenance)
        else:
            change = _conflict(view, record, decision, provenance)
        change.gates = gates
        return change

    return build


def confirm_key(record: dict, request: AdmitRequest) -> str:
    """Who confirms: the trace label and commit the evidence comes from, stable across
    runs and record ids; the incoming id only when nothing says where it comes from."""
    if request.trace and request.trace_commit:
        return f"{request.trace}@{request.trace_commit}"
    raw = rec.dig(record, "evidence", "raw")
    raw = raw if isinstance(raw, dict) else {}
    if isinstance(raw.get("source_repo"), str) and isinstance(raw.get("git_commit"), str):
        return f"{raw['source_repo']}@{raw['git_commit']}"
    return f"{request.target or '-'}:{record['id']}"


def count_confirmation(existing: dict, key: str) -> int | None:
    """Count one confirmation of ``existing`` by ``key`` in place, once per key
    (``worth.track.confirm_keys``); the new ``verified_effective``, None if already counted."""
    source = f"confirm target {existing['id']}"
    track = rec.object_at(existing, source, "worth", "track")
    keys = track.setdefault("confirm_keys", [])
    if not isinstance(keys, list):
        raise RecordError(
            f"{source}: worth.track.confirm_keys is {rec.json_type(keys)}, not an array"
        )
    if key in keys:
        return None
    counters = rec.object_at(existing, source, "worth", "track", "counters")
    for name in rec.COUNTERS:
        counters.setdefault(name, 0)
    if not isinstance(counters["verified_effective"], int):
        raise RecordError(f"{source}: worth.track.counters.verified_effective is not a number")
    track.setdefault("prior", {})
    counters["verified_effective"] += 1
    keys.append(key)
    return counters["verified_effective"]


def _confirm(
    view: StoreView,
    record: dict,
    decision: Decision,
    request: AdmitRequest,
    provenance: list[tuple[str, str]],
) -> Change:
    held = view.read_record(decision.target)
    if held.data is None:
        raise AdmissionRefused(
            f"confirm target {decision.target} is unreadable: {held.error}", [], decision.target
        )
    existing = held.data
    count = count_confirmation(existing, confirm_key(record, request))
    if count is None:
        return Change("confirm", decision.target, {}, held.path, note="already counted, skipped")
    trailers = [("KB-Confirmed-By", record["id"]), *provenance]
    body = f"Confirmed by {record['id']}."
    note = f"verified_effective is now {count}"
    if decision.reproduction:
        retracted = existing.get("status") == RETIRED_STATUS
        stays = " It stays retracted; only git kb unretract lifts that." if retracted else ""
        body = f"Reproduction: {record['id']} holds the same code ({decision.reproduction}).{stays}"
        trailers = [("KB-Reproduction", decision.reproduction), *trailers]
        note = decision.note + (" (retracted; not revived)" if retracted else "")
    return Change(
        "confirm",
        decision.target,
        {held.path: rec.dumps(existing)},
        held.path,
        body,
        trailers,
        note,
    )


def _conflict(
    view: StoreView, record: dict, decision: Decision, provenance: list[tuple[str, str]]
) -> Change:
    target = decision.target
    existing = view.read_record(target).data or {}
    taken = {
        p for p, _ in view.repo.list_tree(view.tip, layout.CONFLICTS_DIR)
    } if view.tip else set()  # fmt: skip
    n = 1
    while layout.conflict_path(record["id"], n) in taken:
        n += 1
    path = layout.conflict_path(record["id"], n)
    queued = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "existing_record_id": target,
        "incoming_record": record,
        "match_confidence": _match_confidence(existing, record),
        "conflict_reason": (
            f"incoming {record.get('type')} (gain.pct {_pct(record)}) contradicts "
            f"existing {existing.get('type')} (gain.pct {_pct(existing)})"
        ),
        "context": {
            f"{side}_{key}": ((doc.get("payload") or {}).get("problem") or {}).get(key)
            for side, doc in (("existing", existing), ("incoming", record))
            for key in ("shape_contract", "bottleneck", "observed_symptom")
        }
        | {"possible_explanations": _CONFLICT_HINTS},
        "resolution": None,
    }
    trailers = [("KB-Target", target), *provenance]
    if decision.reproduction:
        trailers = [("KB-Reproduction", decision.reproduction), *trailers]
    return Change(
        "conflict",
        record["id"],
        {path: rec.dumps(queued)},
        path,
        f"Queued for a human: contradicts {target}.",
        trailers,
        decision.note,
    )


def _pct(record: dict) -> str:
    pct = rec.dig(record, "worth", "gain", "pct")
    return "?" if pct is None else str(pct)


def _match_confidence(existing: dict, incoming: dict) -> float:
    """Share of the merge handle the two records agree on: scope fields and episode key."""
    pairs = list(zip(_scope_key(existing), _scope_key(incoming), strict=True))
    pairs.append((existing.get("episode_key"), incoming.get("episode_key")))
    return round(sum(x == y for x, y in pairs) / len(pairs), 2)
