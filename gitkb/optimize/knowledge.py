"""The knowledge base in every run (``--kb STORE``): what the store says about this kernel.

Before the baseline, the run asks the store (``gitkb.query``, brief, within a byte
budget) for the technique cards, strategies and anti-strategies in the kernel's scope: its arch as
the target names it, its DSL as its source shows it, its operator family. The
scope widens one step at a time while nothing matches (the family as free text,
then any record of the arch and DSL, then of the arch), and never falls back to
a random sample: a prompt carries knowledge or nothing. The answer goes into the
prompt of the agent providers (command, codex, claude) and, as exclusions, to the
knobs provider (a setting an anti-strategy says failed is not proposed).

Each version names the record ids its proposal cited (``kb_cited`` in its
experiment and in the trace's ``memory/v<N>.json``), and its outcome becomes
feedback on them: kept, ``helped``; measured and reverted, ``no-effect``; keyed by
the run's trace label and that version's trace commit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitkb.errors import GitkbError
from gitkb.importers import tlx_knowledge
from gitkb.optimize.setup import hardware_tokens
from gitkb.query import answer
from gitkb.query.feedback import builder
from gitkb.query.scope import Request
from gitkb.store import Store
from gitkb.trace.naming import sniff_dsl
from gitkb.util.attributes import attributes

if TYPE_CHECKING:
    from gitkb.optimize.providers import Candidate
    from gitkb.optimize.setup import RunSetup

BUDGET_BYTES = 6000  # per record type, of the brief answer's JSON
PER_TYPE = 5
# Cards first: one card sums up a technique over many traces (with its evidence counts).
TYPES = ("technique-card", "strategy", "anti-strategy")
_KNOB_CHANGE = re.compile(r"\bset (?P<name>[A-Za-z_][A-Za-z0-9_]*) from .+? to (?P<value>\S+)")
# How a lesson names the cases it was measured on (``trace.lesson``): "on case X" or
# "measured X (...) at 0.91x".
_CASE_NAMED = re.compile(r"\bcase \S|\bmeasured \S+(?: \([^)]*\))? at [0-9.]+x")
_KNOB_MOVE = re.compile(r"\bset (?P<name>[A-Za-z_][A-Za-z0-9_]*) from (?P<a>\S+) to (?P<b>\S+)")


@dataclass
class Knowledge:
    """The store's answer for one run: the served records and how they were asked for."""

    store: str
    commit: str | None = None
    records: list[dict] = field(default_factory=list)
    asked: list[dict] = field(default_factory=list)  # per type: the scope that answered
    notes: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [r["id"] for r in self.records]

    def report(self) -> dict:
        return attributes(self, "store store_commit=commit asked records=ids notes")


@dataclass(frozen=True)
class Briefing:
    """What the store says before the baseline (``--kb``), fixed for the whole run: its
    answer in the kernel's scope, and TLX's knowledge documents for the target as the agent
    context (empty when the store could not be opened)."""

    knowledge: Knowledge
    context: str = ""  # the TLX documents, joined widest first
    context_files: tuple[str, ...] = ()

    def report(self) -> dict:
        """``result.json``'s ``knowledge`` block."""
        return dict(
            self.knowledge.report(),
            context_documents=list(self.context_files),
            context_bytes=len(self.context.encode("utf-8")),
        )


def brief(setup: RunSetup, store_path: str) -> Briefing:
    """Ask the store at ``store_path`` (``--kb``) about the kernel (``gather``) and, when it
    is open, select TLX's knowledge documents for the target."""
    found = gather(
        store_path, hardware_tokens(setup.bundle.target)[0], setup.operator,
        setup.baseline_source,
    )  # fmt: skip
    setup.say(
        f"[gitkb] knowledge base: {len(found.records)} records in the kernel's "
        f"scope ({', '.join(found.ids) or 'none'})"
    )
    if setup.kb is None:
        return Briefing(found)
    context, files = tlx_context(setup, setup.kb)
    return Briefing(found, context, tuple(files))


def tlx_context(setup: RunSetup, store: Store) -> tuple[str, list[str]]:
    """The store's knowledge as TLX's agent context: the documents ``git kb export
    tlx-knowledge`` writes, selected for this target by TLX's rule (the kernel's family
    beside the wider ones), joined widest first, headed by file, within 16 KiB; returns
    the text and the files."""
    target = setup.bundle.target
    found = tlx_knowledge.topics(tlx_knowledge.store_records(store))
    context, files = tlx_knowledge.context(
        found, target.get("backend"), target.get("architecture"), setup.operator
    )
    setup.say(
        f"[gitkb] knowledge context: {', '.join(files) or 'none'} "
        f"({len(context.encode('utf-8'))} bytes)"
    )
    return context, files


def _attempts(arch: str, dsl: str | None, operator: str | None) -> list[dict]:
    """The scopes asked in turn, narrowest first."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", operator or "") if w]
    base: dict[str, object] = {"arch": arch, "dsl": dsl} if dsl else {"arch": arch}
    out: list[dict[str, object]] = []
    if operator:
        out.append({**base, "family": operator})
    if words:
        out.append({**base, "terms": tuple(words), "any_term": True})
    if dsl:
        out.append(base)
    out.append({"arch": arch})
    return out


def gather(store_path: str, hardware: str, operator: str | None, source: str) -> Knowledge:
    """Ask the store about the kernel; an answer it cannot give is noted, never fatal."""
    dsl = sniff_dsl(source)
    knowledge = Knowledge(store=str(store_path))
    try:
        store = Store.open(store_path)
        held = set(answer.vocabulary(store, "type")["values"])
    except GitkbError as exc:
        knowledge.notes.append(exc.message)
        return knowledge
    for record_type in TYPES:
        if record_type not in held:
            continue  # a store of single traces has no cards yet: nothing to ask
        for scope in _attempts(hardware, None if dsl == "any" else dsl, operator):
            request = Request(
                type=record_type, limit=PER_TYPE, brief=True, max_bytes=BUDGET_BYTES,
                fallback=False, **scope,
            )  # fmt: skip
            try:
                found = answer.query(store, request)
            except GitkbError as exc:
                knowledge.notes.append(f"{record_type}: {exc.message}")
                continue
            knowledge.commit = found["result"]["commit"]
            if found["result"]["kind"] == "matches":
                knowledge.records += found["records"]
                asked = {k: (list(v) if isinstance(v, tuple) else v) for k, v in scope.items()}
                knowledge.asked.append({"type": record_type, **asked})
                break
    return knowledge


def prompt_section(records: list[dict]) -> list[str]:
    """The prompt's lines about the store's answer (empty when it had none)."""
    if not records:
        return []
    return [
        "",
        "## What the knowledge base says (gitkb query, in this kernel's scope)",
        "Technique cards (how often a technique paid off across traces: evidence_counts), "
        "strategies to consider and anti-strategies not to repeat, as the store serves them. "
        'If one shaped your change, list its id in candidate_metadata.json as "kb_records".',
        "```json",
        json.dumps(records, ensure_ascii=False, separators=(",", ":")),
        "```",
    ]


def cited(records: list[dict], named: list[str] | None) -> list[str]:
    """The ids a proposal cites: those the agent named that its prompt held, else every id
    its prompt held."""
    held = [r["id"] for r in records]
    chosen = [i for i in named or [] if i in held]
    return chosen or held


def knob_exclusions(
    records: list[dict], cases: list[str]
) -> dict[tuple[str, str], tuple[str, bool]]:
    """(tunable, repr of a value) -> (the anti-strategy id that says setting it failed, and
    whether that evidence holds for this workload). A knob sweep's lever reads ``set NAME
    from A to B``; its lesson names the cases it was measured on. One that names none of
    ``cases`` (the run's case ids) but names other cases was measured on another workload:
    a prior, not a verdict here. One that names no case at all is taken to hold."""
    out: dict[tuple[str, str], tuple[str, bool]] = {}
    for record in records:
        if record.get("type") != "anti-strategy":
            continue
        payload = raw if isinstance(raw := record.get("payload"), dict) else {}
        texts = [t for t in (payload.get("attempted"), payload.get("change")) if isinstance(t, str)]
        here = _names_workload(" ".join(texts), cases)
        for text in texts:
            for found in _KNOB_CHANGE.finditer(text):
                key = (found["name"], found["value"].rstrip(".,;"))
                if key not in out or (here and not out[key][1]):
                    out[key] = (record["id"], here)
    return out


def _names_workload(text: str, cases: list[str]) -> bool:
    """Whether a lesson holds for the workload of ``cases``: it names one of them, or it
    names no case at all (nothing says it was measured elsewhere)."""
    for case in cases:
        if re.search(rf"(?<![\w.-]){re.escape(case)}(?![\w.-])", text):
            return True
    return not _CASE_NAMED.search(text)


def knob_moves(records: list[dict], tunables: dict) -> dict[str, int]:
    """tunable -> +1 or -1: the way the kept strategies in ``records`` moved it along its
    declared values (``set NAME from A to B``), by majority; a tie or no evidence is left
    out."""
    votes: dict[str, int] = {}
    for record in records:
        if record.get("type") != "strategy":
            continue
        payload = raw if isinstance(raw := record.get("payload"), dict) else {}
        text = raw if isinstance(raw := payload.get("change"), str) else ""
        for found in _KNOB_MOVE.finditer(text):
            values = [repr(v) for v in tunables.get(found["name"], [])]
            a, b = found["a"], found["b"].rstrip(".,;")
            if a in values and b in values and a != b:
                step = 1 if values.index(b) > values.index(a) else -1
                votes[found["name"]] = votes.get(found["name"], 0) + step
    return {name: (1 if vote > 0 else -1) for name, vote in votes.items() if vote}


def give_feedback(
    kb: Store, trace_label: str, candidate: Candidate, status: str, trace_commit: str | None
) -> dict:
    """The outcome of a measured version as feedback on the ids it cited (one commit each,
    into ``kb`` keyed by the run's ``trace_label``); what was written, or why not."""
    ids = list(getattr(candidate, "cited", None) or [])
    if not ids or trace_commit is None:
        return {}
    if status not in ("promoted", "rejected"):
        return {}
    outcome = "helped" if status == "promoted" else "no-effect"
    builds = [builder(i, outcome, trace=trace_label, trace_commit=trace_commit) for i in ids]
    try:
        written = kb.commit(builds, on_refusal="skip")
    except GitkbError as exc:  # the run's verdict stands; the result says why not
        return {"outcome": outcome, "error": exc.message}
    return {"outcome": outcome, "records": ids, "commits": [a.commit for a in written]}
