"""The cards pass (``git kb curate --cards``): a technique card for every technique the
store's live strategies and anti-strategies support, computed by ``gates.card_evidence``.

A technique supported by two records from two traces (or two hardware pages) gets a
card; a card whose evidence changed is regenerated: a new card (the next ``-cNN`` id,
``retrieval.links.supersedes`` naming the old one) is inserted, then the old one is
retracted with the reason "superseded by <new id>" (the store's own tombstone, so the
history rules need no new edit); a card whose evidence no longer supports it is
retracted. A dry run prints the plan; a re-run over unchanged evidence writes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitkb import record as rec
from gitkb.gates import card_evidence as ce
from gitkb.record.worth import rank
from gitkb.store.admission import check_record, refuse_findings
from gitkb.store.writer import Builder, Change
from gitkb.trace import techniques
from gitkb.vcs.plain import identity

if TYPE_CHECKING:
    from gitkb.store.store import Store
    from gitkb.store.view import StoreView

BUILDER_VERSION = "gitkb-cards-2"
# How a card states a part's direction (a named value stands as it is).
_DIRECTIONS = {
    techniques.UP: "raised",
    techniques.DOWN: "lowered",
    techniques.REMOVED: "removed",
}
_NUMBER = re.compile(r"-c(\d+)$")


@dataclass
class CardStep:
    """One card's fate in the pass: write (new), regenerate, retire or unchanged."""

    action: str
    technique: str
    card_id: str
    replaces: str | None = None
    card: dict | None = None
    facts: ce.CardFacts | None = None

    def as_json(self) -> dict:
        out: dict = {"action": self.action, "technique": self.technique, "id": self.card_id}
        if self.replaces:
            out["replaces"] = self.replaces
        if self.facts is not None:
            payload = self.facts.payload
            out |= {k: payload[k] for k in ce.NUMBER_FIELDS}
            out |= {"traces": len(self.facts.traces), "pages": self.facts.pages,
                    "cited_records": self.facts.cited}  # fmt: skip
        return out


@dataclass
class CardPlan:
    steps: list[CardStep] = field(default_factory=list)
    techniques: int = 0  # techniques seen among live strategies and anti-strategies
    unsupported: int = 0  # of them, too thin for a card

    def writes(self) -> list[CardStep]:
        return [s for s in self.steps if s.action != "unchanged"]


def _read(view: StoreView, types: tuple[str, ...]) -> dict[str, dict]:
    rows = [r for t in types for r in view.scoped_rows(type=t) if r.id is not None]
    raw = view.read_files([r.path for r in rows])
    out = {}
    for row in rows:
        loaded = rec.load(row.path, raw.get(row.path, b""))
        if loaded.data is not None:
            out[row.id] = loaded.data
    return out


def card_id(key: ce.CardKey, number: int) -> str:
    return f"{key.slug()}-c{number:02d}"


def _card_key(card: dict) -> ce.CardKey | None:
    scope = rec.scope_of(card)
    parts = [scope.get(k) for k in ce.SCOPE_FIELDS]
    technique = rec.dig(card, "payload", "technique")
    if not (isinstance(technique, str) and technique):
        return None
    if not all(isinstance(p, str) and p for p in parts):
        return None
    vendor, arch, dsl, family = parts
    return ce.CardKey(vendor, arch, dsl, family, technique)


def card_record(facts: ce.CardFacts, number: int, supersedes: str | None) -> dict:
    """The technique-card record ``facts`` states, as the ``number``-th card of its key:
    its technique as the vocabulary names it (each part's direction stated), and the
    vocabulary's version it was computed under."""
    key, payload = facts.key, facts.payload
    vocabulary = techniques.vocabulary()
    parts = vocabulary.parse_key(key.technique) or ()
    said = "; ".join(f"{p.name} {_DIRECTIONS.get(p.direction, p.direction)}".strip() for p in parts)
    named = f"{key.technique} ({said})" if said and said != key.technique else key.technique
    kept, attempts = payload["kept"], payload["attempts"]
    where = f"{key.vendor} {key.arch}"
    pages = f" ({', '.join(facts.pages)})" if facts.pages else ""
    links: dict = {"cited_records": facts.cited}
    if supersedes:
        links["supersedes"] = [supersedes]
    gain: dict = {"basis": "measured", "kind": "performance" if kept else "none",
                  "pct": payload["typical_gain_pct"], "metrics": []}  # fmt: skip
    if payload["typical_gain_pct"] is not None:
        gain["primary"] = "latency"
        gain["metrics"] = [{
            "metric": "latency", "direction": "lower-better",
            "delta_pct": payload["typical_gain_pct"], "unit": "%",
            "measured_over": f"median of the {kept} kept attempts' own measurements",
            "source": "corpus-aggregate",
        }]  # fmt: skip
    card: dict = {
        "schema": rec.SCHEMA_NAME,
        "id": card_id(key, number),
        "type": ce.CARD_TYPE,
        "level": "operator",
        "status": "active",
        "episode_key": f"{key.arch}|{key.dsl}|{key.family}|card#{key.technique}|operator",
        "retrieval": {
            "scope": facts.scope,
            "generality": {"arch": key.arch, "language": key.dsl},
            "signals": {
                "bottleneck": None,
                "metrics": {},
                "shape_regime": {},
                "symptoms": facts.symptoms,
            },
            "technique_tags": [key.technique, key.family],
            "triggers": [
                f"considering {key.technique} for a {key.dsl} {key.family} kernel on {where}"
            ],
            "links": links,
        },
        "payload": {
            "goal": f"Know how often {key.technique} paid off on {key.family} "
            f"({key.dsl}, {where}) and by how much.",
            "problem": {
                "target": f"{where}{pages}",
                "statement": f"{named} on {key.family}: kept in {kept} of {attempts} "
                f"attempts across {len(facts.traces)} traces (technique vocabulary "
                f"{vocabulary.version})",
            },
            **payload,
        },
        "evidence": {
            "summary": {
                "confidence": "measured",
                "measured_on": {
                    "gpu": ", ".join(facts.gpus) or where,
                    "harness": "each cited record's own trace harness",
                    "technique_vocabulary": vocabulary.version,
                },
            },
            "raw": {},
        },
        "worth": {
            "gain": gain,
            "track": rec.new_track(
                {
                    "corpus_kept_ratio": round(kept / attempts, 4),
                    "attempts": attempts,
                    "kept": kept,
                    "technique": key.technique,
                    "n_independent_runs": len(facts.traces) or None,
                }
            ),
        },
    }
    card["worth"]["rank"] = rank(card) | {"builder_version": BUILDER_VERSION}
    return card


def _same(card: dict, fresh: dict) -> bool:
    """Whether a stored card already says what ``fresh`` says (ids and links aside)."""
    keep = ("payload", "level")
    return (
        all(card.get(k) == fresh.get(k) for k in keep)
        and (ce.stated_vocabulary(card) == ce.stated_vocabulary(fresh))
        and (
            rec.scope_of(card) == rec.scope_of(fresh)
            and ce.cited_of(card) == ce.cited_of(fresh)
            and rec.dig(card, "retrieval", "signals", "symptoms")
            == rec.dig(fresh, "retrieval", "signals", "symptoms")
        )
    )


def plan_cards(view: StoreView) -> CardPlan:
    """What the cards pass would write on ``view``."""
    evidence = _read(view, ce.EVIDENCE_TYPES)
    stored = _read(view, (ce.CARD_TYPE,))
    numbers: dict[ce.CardKey, int] = {}
    live: dict[ce.CardKey, list[str]] = {}
    for card_id_, card in stored.items():
        key = _card_key(card)
        match = _NUMBER.search(card_id_)
        if key is None or match is None or not card_id_.startswith(key.slug() + "-c"):
            continue  # not a computed card (a hand-written or imported one)
        numbers[key] = max(numbers.get(key, 0), int(match.group(1)))
        if card.get("status") not in ce.RETIRED_STATUSES:
            live.setdefault(key, []).append(card_id_)
    plan = CardPlan()
    groups = ce.pooled(evidence)
    plan.techniques = len(groups)
    for key in sorted(groups, key=lambda k: k.slug()):
        facts = ce.facts(key, groups[key])
        current = sorted(live.pop(key, []))
        if not facts.supported():
            plan.unsupported += 1
            plan.steps += [CardStep("retire", key.technique, c) for c in current]
            continue
        newest = current[-1] if current else None
        fresh = card_record(facts, numbers.get(key, 0) + 1, newest)
        if newest is not None and _same(stored[newest], fresh):
            plan.steps.append(CardStep("unchanged", key.technique, newest, facts=facts))
            plan.steps += [CardStep("retire", key.technique, c) for c in current[:-1]]
            continue
        action = "regenerate" if newest else "write"
        plan.steps.append(CardStep(action, key.technique, fresh["id"], newest, fresh, facts))
    for key, ids in sorted(live.items(), key=lambda kv: kv[0].slug()):
        plan.steps += [CardStep("retire", key.technique, c) for c in ids]  # evidence gone
    return plan


def _insert(card: dict) -> Builder:
    def build(view: StoreView) -> Change:
        path = rec.path_for(card)
        gates, findings = check_record(view, card, path, "insert")
        if findings:
            raise refuse_findings(f"card {card['id']}", findings, card["id"])
        cited = len(ce.cited_of(card))
        body = (f"Technique card computed by git kb curate --cards from {cited} cited "
                "records (retrieval.links.cited_records).")  # fmt: skip
        change = Change("insert", card["id"], {path: rec.dumps(card)}, path, body,
                        [("KB-Gates", gates)])  # fmt: skip
        change.gates = gates
        return change

    return build


def _retire(card_id_: str, reason: str, who: str) -> Builder:
    from gitkb.warmstart.retract import retraction

    return lambda view: retraction(view, card_id_, reason, who)


def cards_pass(store: Store, apply: bool = False, by: str | None = None) -> dict:
    """The cards pass as JSON: the plan, and with ``apply`` the commits it made."""
    if apply:
        store.require_signing()
    plan = plan_cards(store.view())
    report = {
        "applied": apply,
        "techniques": plan.techniques,
        "unsupported": plan.unsupported,
        "cards": [s.as_json() for s in plan.steps],
        "written": 0,
        "retracted": 0,
    }
    if not apply or not plan.writes():
        return report
    who = by.strip() if by and by.strip() else identity()
    builds = []
    for step in plan.writes():
        if step.card is not None:
            builds.append(_insert(step.card))
        if step.action == "retire":
            builds.append(_retire(step.card_id, "its evidence no longer supports a card", who))
        elif step.replaces:
            builds.append(_retire(step.replaces, f"superseded by {step.card_id}", who))
    admissions = store.commit(builds)
    report["written"] = sum(1 for a in admissions if a.action == "insert" and a.commit)
    report["retracted"] = sum(1 for a in admissions if a.action == "retract" and a.commit)
    report["commits"] = [a.as_json() for a in admissions]
    return report
