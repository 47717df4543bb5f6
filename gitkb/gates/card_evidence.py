"""What a technique card may say, computed from the records it cites.

A card aggregates one technique over many traces: its numbers are a pure function of
the strategies and anti-strategies it cites, so the card gate recomputes them and
``git kb curate --cards`` writes them with the same function. A technique is the
record's canonical key under the technique vocabulary (``gitkb.trace.techniques``: its
diff, else its sentence, else its tags), so "evict first on the streamed x" and
``eviction_policy="evict_first"`` are one technique, and more warps and fewer warps two
(``num-warps-up``, ``num-warps-down``). A parameter or a named setting whose direction
nothing shows ("warps=4", "set num_warps=4": up or down, nobody can say) counts toward no
card: a card over it could pool changes that went both ways, and a card that mixes two
techniques is worse than none. The diff is read first, so a diff showing the old and
the new value gives the direction. An uncategorized lever keeps its own phrase, named
by the operator rules (``trace.naming.operator_slug``). A card's scope is the
evidence's: one vendor, arch, dsl and operator family (across its traces, page families
and the products of the arch); a product only when every cited record was measured on it (else
the products measured, listed under ``scope.architectures``). Attempts and kept count a
record once per trace that measured it: the record, and each trace that confirmed it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from gitkb.record import dig, scope_of
from gitkb.record.values import finite_number, stripped_text
from gitkb.trace.naming import operator_slug
from gitkb.trace.techniques import Detection, own_tags, record_technique, vocabulary

CARD_TYPE = "technique-card"
EVIDENCE_TYPES = ("strategy", "anti-strategy")
RETIRED_STATUSES = ("deprecated", "superseded")
MIN_ATTEMPTS = 2
MIN_SOURCES = 2  # traces, or hardware pages
# The payload fields a card states from its evidence; the gate compares each.
COMPUTED_FIELDS = (
    "technique",
    "what",
    "when",
    "caveats",
    "attempts",
    "kept",
    "success_rate_pct",
    "typical_gain_pct",
    "best_gain_pct",
    "measured_wins",
)
NUMBER_FIELDS = ("attempts", "kept", "success_rate_pct", "typical_gain_pct", "best_gain_pct")
SCOPE_FIELDS = ("vendor", "arch", "dsl", "operator_family")


@dataclass(frozen=True)
class CardKey:
    """Where a technique's evidence is pooled: one page family and one technique."""

    vendor: str
    arch: str
    dsl: str
    family: str
    technique: str

    def slug(self) -> str:
        # a key joins the techniques of one change with "+", which no id spells
        technique = self.technique.replace("+", "_")
        return f"{self.vendor}.{self.arch}.{self.dsl}.{self.family}.card.{technique}"


@dataclass
class CardFacts:
    """Everything a card states that its cited records decide."""

    key: CardKey
    cited: list[str]
    payload: dict
    scope: dict
    symptoms: list[str]
    traces: list[str]
    pages: list[str]
    gpus: list[str] = field(default_factory=list)

    def supported(self) -> bool:
        """At least two attempts (records, or a record and a trace confirming it), from two
        traces or two hardware pages."""
        return (self.payload["attempts"] or 0) >= MIN_ATTEMPTS and (
            len(self.traces) >= MIN_SOURCES or len(self.pages) >= MIN_SOURCES
        )


def _gain(record: dict) -> float | None:
    return finite_number(dig(record, "worth", "gain", "pct"))


def technique_of(record: dict) -> str | None:
    """The technique a strategy or anti-strategy is about: its canonical key under the
    shipped vocabulary (``trace.techniques.record_technique``: its own diff, else its
    sentence, else its tags), else, uncategorized, its own phrase named by the operator
    rules; None for other types, a record that names none, or one whose parameter or
    named setting went no known way."""
    if record.get("type") not in EVIDENCE_TYPES:
        return None
    detection = record_technique(record)
    if detection.categorized:
        return None if undirected(detection) else detection.key
    tags = own_tags(record)
    if tags:
        return operator_slug(tags[0])
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    change = stripped_text(payload.get("change")) or stripped_text(payload.get("attempted"))
    return operator_slug(change.replace(" ", "-")) if change else None


def undirected(detection: Detection) -> bool:
    """Whether a technique that goes one way or another (a parameter: up or down; a named
    setting: its new value) is named without its direction."""
    named = ((vocabulary().named(f.name), f.direction) for f in detection.found)
    return any(t is not None and t.kind != "construct" and not d for t, d in named)


# Where a computed card names the technique vocabulary it was computed under.
VOCABULARY_FIELD = ("evidence", "summary", "measured_on", "technique_vocabulary")


def stated_vocabulary(card: dict) -> str | None:
    """The vocabulary version a card says it was computed under (None: it says none)."""
    value = dig(card, *VOCABULARY_FIELD)
    return value if isinstance(value, str) else None


def key_of(record: dict, live: bool = True) -> CardKey | None:
    """The card a strategy or anti-strategy counts toward (only a live one when ``live``),
    or None."""
    if live and record.get("status") in RETIRED_STATUSES:
        return None
    technique = technique_of(record)
    scope = scope_of(record)
    parts = [stripped_text(scope.get(k)) for k in SCOPE_FIELDS]
    if technique is None or technique == "unknown" or not all(parts):
        return None
    vendor, arch, dsl, family = parts
    return CardKey(vendor, arch, dsl, family, technique)


def _label(record: dict) -> str:
    return stripped_text(dig(record, "evidence", "raw", "source_repo"))


def _confirmations(record: dict) -> list[str]:
    """The traces that confirmed a record (``worth.track.confirm_keys``: ``label@commit``):
    mining folds a second trace's same attempt into the first record, so each key is one
    more attempt with the same outcome."""
    keys = dig(record, "worth", "track", "confirm_keys")
    return [k for k in keys if isinstance(k, str) and k] if isinstance(keys, list) else []


def _attempts(record: dict) -> int:
    return 1 + len(_confirmations(record))


def _page(record: dict) -> str:
    return stripped_text(scope_of(record).get("product")).lower()


def _condition(record: dict) -> str:
    """An anti-strategy's stated condition, its values verbatim: ``sm_arch=sm_90, ...``."""
    condition = dig(record, "payload", "established_fact", "condition")
    if not isinstance(condition, dict):
        return ""
    return ", ".join(f"{k}={v}" for k, v in condition.items() if isinstance(v, (str, int, float)))


def facts(key: CardKey, records: dict[str, dict]) -> CardFacts:
    """What a card over ``records`` (id -> record, every one of them ``key``'s) states."""
    ids = sorted(records)
    kept = [i for i in ids if records[i].get("type") == "strategy"]
    failed = [i for i in ids if records[i].get("type") == "anti-strategy"]
    gains = [g for g in (_gain(records[i]) for i in kept) if g is not None]
    wins = [
        {
            "operator": stripped_text(dig(records[i], "payload", "problem", "operator"))
            or key.family,
            "dsl": key.dsl,
            "gain_pct": _gain(records[i]),
            "change": stripped_text(dig(records[i], "payload", "change")),
        }
        for i in kept
    ]
    caveats: list[str] = []
    conditions: list[str] = []
    for i in failed:
        mechanism = stripped_text(dig(records[i], "payload", "established_fact", "mechanism"))
        if mechanism and mechanism not in caveats:
            caveats.append(mechanism)
        condition = _condition(records[i])
        if condition and condition not in conditions:
            conditions.append(condition)
    attempts = sum(_attempts(records[i]) for i in ids)
    kept_attempts = sum(_attempts(records[i]) for i in kept)
    when = f"kept in {kept_attempts} of {attempts} attempts"
    if conditions:
        when += "; it failed where " + "; ".join(conditions)
    what = next((w["change"] for w in wins if w["change"]), "") or next(
        (stripped_text(dig(records[i], "payload", "attempted")) for i in failed), ""
    )
    payload = {
        "technique": key.technique,
        "what": what,
        "when": when,
        "caveats": caveats,
        "attempts": attempts,
        "kept": kept_attempts,
        "success_rate_pct": round(kept_attempts / attempts * 100, 1) if attempts else None,
        "typical_gain_pct": round(statistics.median(gains), 2) if gains else None,
        "best_gain_pct": round(max(gains), 2) if gains else None,
        "measured_wins": wins,
    }
    pages = sorted({_page(r) for r in records.values()} - {""})
    operators = sorted(
        {
            o
            for r in records.values()
            for o in (scope_of(r).get("operators") or [])
            if isinstance(o, str) and o
        }
    )
    scope: dict = {
        "vendor": key.vendor,
        "arch": key.arch,
        "product": pages[0] if len(pages) == 1 and all(map(_page, records.values())) else None,
        "dsl": key.dsl,
        "operator_family": key.family,
        "operators": operators,
    }
    if scope["product"] is None and pages:
        scope["architectures"] = pages
    symptoms = sorted(
        {
            s
            for r in records.values()
            # as before, any iterable value is read (the schema makes it a list)
            for s in cast("Iterable[object]", dig(r, "retrieval", "signals", "symptoms") or [])
            if isinstance(s, str) and s
        }
    )
    measured_on = (dig(r, "evidence", "summary", "measured_on", "gpu") for r in records.values())
    gpus = sorted({stripped_text(g) for g in measured_on} - {""})
    traces = sorted(
        (
            {_label(r) for r in records.values()}
            | {k.split("@", 1)[0] for r in records.values() for k in _confirmations(r)}
        )
        - {""}
    )
    return CardFacts(key, ids, payload, scope, symptoms, traces, pages, gpus)


def pooled(records: dict[str, dict]) -> dict[CardKey, dict[str, dict]]:
    """The live strategies and anti-strategies of ``records`` (id -> record) by card key."""
    groups: dict[CardKey, dict[str, dict]] = {}
    for record_id, record in records.items():
        key = key_of(record)
        if key is not None:
            groups.setdefault(key, {})[record_id] = record
    return groups


def cited_of(card: dict) -> list:
    """The ``retrieval.links.cited_records`` of a card, as stated (a list, else [])."""
    value = dig(card, "retrieval", "links", "cited_records")
    return value if isinstance(value, list) else []


def states_numbers(card: dict) -> bool:
    """Whether a card states any aggregate (a hand-written card states none)."""
    payload = card.get("payload") if isinstance(card.get("payload"), dict) else {}
    return any(payload.get(k) is not None for k in NUMBER_FIELDS)
