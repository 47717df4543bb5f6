"""Store gate `technique-card`: a card's numbers are its cited records' numbers.

A technique card that states an aggregate (attempts, kept, success rate, typical or best
gain) cites the strategies and anti-strategies it was computed from in
``retrieval.links.cited_records``; every computed field (``card_evidence``) must equal a
recomputation from those records as the store holds them at this commit (the context's
records, else its store view: a pushed card is judged against the store it lands on).
A cited record that is missing, cited twice, retracted (at admission) or of another
technique (its canonical key under the technique vocabulary the card names, which must
be this gitkb's at admission), support below two attempts from two traces (or two
hardware pages), and a scope wider than the evidence (another product, level or arch)
are refused. A retracted card is a tombstone and is not judged, nor is a hand-written
card (GPU-wiki's), which states no aggregate. Given only files without the store (the pre-commit
hook's staged records) a card whose evidence is not among them is skipped, said so.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

from gitkb.errors import GitkbError
from gitkb.gates import Finding, Gate, GateContext, Skip
from gitkb.gates import card_evidence as ce
from gitkb.record import RecordFile, scope_of
from gitkb.trace import techniques

NAME = "technique-card"


def _cited_record(ctx: GateContext, by_id: dict, record_id: str) -> dict | None:
    if record_id in by_id:
        return by_id[record_id]
    if ctx.store is None:
        return None
    try:
        return ctx.store.read_record(record_id).data
    except GitkbError:
        return None


def card_findings(ctx: GateContext, card_id: str, card: dict, by_id: dict) -> Iterator[Finding]:
    # A card being admitted or pushed cites live records only; a stored card whose record
    # was retracted since is stale, not false: its numbers still recompute from what it
    # cites, and the next ``curate --cards`` supersedes it.
    admitting = ctx.admission is not None
    cited = ce.cited_of(card)
    payload = card.get("payload") if isinstance(card.get("payload"), dict) else {}
    if not cited:
        if ce.states_numbers(card):
            yield Finding(card_id, NAME, "states aggregates but cites no record",
                          "retrieval.links.cited_records")  # fmt: skip
        return
    if len({str(c) for c in cited}) != len(cited):
        yield Finding(card_id, NAME, "cites a record twice", "retrieval.links.cited_records")
        return
    records: dict[str, dict] = {}
    for position, record_id in enumerate(cited):
        where = f"retrieval.links.cited_records[{position}]"
        record = _cited_record(ctx, by_id, record_id) if isinstance(record_id, str) else None
        if record is None:
            yield Finding(card_id, NAME, f"cites {record_id!r}, which is no record here", where)
        elif record.get("status") in ce.RETIRED_STATUSES and admitting:
            yield Finding(card_id, NAME, f"cites {record_id}, which is {record['status']}", where)
        elif record.get("type") not in ce.EVIDENCE_TYPES:
            yield Finding(card_id, NAME, f"cites {record_id}, a {record.get('type')}", where)
        else:
            records[record_id] = record
    if len(records) != len(cited):
        return
    stated, current = ce.stated_vocabulary(card), techniques.vocabulary().version
    if stated != current and admitting:
        yield Finding(card_id, NAME, f"was computed under technique vocabulary {stated!r}, "
                      f"not this gitkb's {current!r}: run git kb curate --cards",
                      ".".join(ce.VOCABULARY_FIELD))  # fmt: skip
        return
    keys = {ce.key_of(r, live=False) for r in records.values()}
    own = _own_key(card)
    if stated != current and own is not None:
        # A standing card of another vocabulary is stale, not false: its numbers are
        # judged under the technique it names; the next curate --cards regenerates it.
        keys = {own}
    if len(keys) != 1 or None in keys:
        yield Finding(card_id, NAME, "its cited records are about more than one technique "
                      "or page family", "retrieval.links.cited_records")  # fmt: skip
        return
    facts = ce.facts(keys.pop(), records)
    if not facts.supported():
        yield Finding(card_id, NAME, f"{facts.payload['attempts']} attempt(s) from "
                      f"{len(facts.traces)} trace(s) and {len(facts.pages)} page(s) cannot support "
                      "a card: it needs two attempts from two traces or two hardware pages",
                      "retrieval.links.cited_records")  # fmt: skip
    for name in ce.COMPUTED_FIELDS:
        if payload.get(name) != facts.payload[name]:
            yield Finding(card_id, NAME, f"states {payload.get(name)!r}; its cited records give "
                          f"{facts.payload[name]!r}", f"payload.{name}")  # fmt: skip
    gain = card.get("worth", {}).get("gain") if isinstance(card.get("worth"), dict) else None
    if isinstance(gain, dict) and gain.get("pct") != facts.payload["typical_gain_pct"]:
        yield Finding(card_id, NAME, f"headline gain {gain.get('pct')!r} is not the typical "
                      f"gain {facts.payload['typical_gain_pct']!r}", "worth.gain.pct")  # fmt: skip
    yield from _scope_findings(card_id, card, facts)


def _own_key(card: dict) -> ce.CardKey | None:
    """The card key a card states (its scope and technique), or None."""
    scope = scope_of(card)
    parts = [scope.get(k) for k in ce.SCOPE_FIELDS]
    payload = card.get("payload") if isinstance(card.get("payload"), dict) else {}
    technique = payload.get("technique")
    if not all(isinstance(p, str) and p for p in [*parts, technique]):
        return None
    vendor, arch, dsl, family = parts
    return ce.CardKey(vendor, arch, dsl, family, technique)


def _scope_findings(card_id: str, card: dict, facts: ce.CardFacts) -> Iterator[Finding]:
    scope = scope_of(card)
    for name in (*ce.SCOPE_FIELDS, "product"):
        if scope.get(name) != facts.scope[name]:
            yield Finding(card_id, NAME, f"claims {scope.get(name)!r}; its evidence is "
                          f"{facts.scope[name]!r}", f"retrieval.scope.{name}")  # fmt: skip
    if sorted(scope.get("architectures") or []) != sorted(facts.scope.get("architectures", [])):
        yield Finding(card_id, NAME, f"lists {scope.get('architectures')!r}; its evidence was "
                      f"measured on {facts.pages!r}", "retrieval.scope.architectures")  # fmt: skip
    wider = set(scope.get("operators") or []) - set(facts.scope["operators"])
    if wider:
        yield Finding(card_id, NAME, f"names operators no cited record measured: "
                      f"{sorted(map(str, wider))}", "retrieval.scope.operators")  # fmt: skip
    if card.get("level") != "operator":
        yield Finding(card_id, NAME, f"level {card.get('level')!r} is wider than one operator "
                      "family's evidence", "level")  # fmt: skip
    generality = card.get("retrieval", {}).get("generality") or {}
    if generality.get("arch") != facts.key.arch or generality.get("language") != facts.key.dsl:
        yield Finding(card_id, NAME, "generality is wider than the evidence's arch and dsl",
                      "retrieval.generality")  # fmt: skip


def check(ctx: GateContext) -> Iterator[Finding]:
    cards = [
        (f, d)
        for f, d in ctx.parsed()
        if d.get("type") == ce.CARD_TYPE and d.get("status") not in ce.RETIRED_STATUSES
    ]
    judged = [(f, d) for f, d in cards if ce.cited_of(d) or ce.states_numbers(d)]
    by_id = {d["id"]: d for _, d in ctx.parsed() if isinstance(d.get("id"), str)}
    if ctx.store is None and any(
        c not in by_id for _, d in judged for c in ce.cited_of(d) if isinstance(c, str)
    ):
        # The pre-commit hook sees the staged files alone; admission, the pre-receive hook
        # and validate hold the store a card's evidence is in.
        raise Skip("a card's cited records are not in these files: the store's gates judge it")
    for record_file, card in judged:
        yield from card_findings(ctx, record_file.id, card, by_id)


# --- injection cases ----------------------------------------------------------------------
# The examples hold no computed card: each case adds two traces' strategies (copies of the
# example strategy) and a card computed from them, then breaks the card one way.


def _computed_card(ctx: GateContext) -> tuple[dict, list[dict]] | None:
    strategy = next((d for _, d in ctx.parsed() if d.get("type") == "strategy"), None)
    card = next((d for _, d in ctx.parsed() if d.get("type") == ce.CARD_TYPE), None)
    if strategy is None or card is None:
        return None
    evidence = []
    for n, pct in ((1, 20.0), (2, 30.0)):
        clone = copy.deepcopy(strategy)
        clone["id"] = f"{strategy['id']}-trace{n}"
        clone["evidence"]["raw"]["source_repo"] = f"kernel_opt_00{n}_softmax"
        clone["worth"]["gain"]["pct"] = pct
        ctx.records.append(RecordFile(f"records/x/{clone['id']}.json", b"", clone))
        evidence.append(clone)
    key = ce.key_of(evidence[0])
    facts = ce.facts(key, {r["id"]: r for r in evidence})
    card.update(level="operator")
    card["payload"].update(facts.payload)
    card["retrieval"]["scope"] = dict(facts.scope)
    card["retrieval"]["generality"].update(arch=key.arch, language=key.dsl)
    card["retrieval"]["links"] = {"cited_records": facts.cited}
    card.setdefault("worth", {}).setdefault("gain", {})["pct"] = facts.payload["typical_gain_pct"]
    summary = card.setdefault("evidence", {}).setdefault("summary", {})
    summary.setdefault("measured_on", {})["technique_vocabulary"] = techniques.vocabulary().version
    return card, evidence


def _breaking(change: Callable[..., object]) -> Callable[[GateContext], bool]:
    def mutate(ctx: GateContext) -> bool:
        made = _computed_card(ctx)
        return made is not None and change(*made) is not False

    return mutate


def _typical_gain_off(card: dict, evidence: list[dict]) -> None:
    card["payload"]["typical_gain_pct"] = 40.0


def _kept_inflated(card: dict, evidence: list[dict]) -> None:
    card["payload"]["kept"] += 1


GATE = Gate(
    NAME, "store", "a technique card's numbers recompute from the live records it cites", check
)


@GATE.case("cites-retracted")
def _cites_retracted(ctx: GateContext) -> bool:
    """A card admitted while one of its records is retracted."""
    made = _computed_card(ctx)
    if made is None:
        return False
    made[1][1]["status"] = "deprecated"
    ctx.admission = "insert"
    return True


def _wider_product(card: dict, evidence: list[dict]) -> None:
    card["retrieval"]["scope"]["product"] = "any"


def _wider_level(card: dict, evidence: list[dict]) -> None:
    card["level"] = "generic"
    card["retrieval"]["generality"]["arch"] = "any"


def _numbers_without_citations(card: dict, evidence: list[dict]) -> None:
    del card["retrieval"]["links"]


def _cited_twice(card: dict, evidence: list[dict]) -> None:
    card["retrieval"]["links"]["cited_records"].append(evidence[0]["id"])


@GATE.case("other-vocabulary")
def _other_vocabulary(ctx: GateContext) -> bool:
    """A card admitted with the number of a vocabulary this gitkb does not ship."""
    made = _computed_card(ctx)
    if made is None:
        return False
    made[0]["evidence"]["summary"]["measured_on"]["technique_vocabulary"] = "0-retired"
    ctx.admission = "insert"
    return True


def _one_trace(card: dict, evidence: list[dict]) -> None:
    evidence[1]["evidence"]["raw"]["source_repo"] = evidence[0]["evidence"]["raw"]["source_repo"]


GATE.add("typical-gain-off", _breaking(_typical_gain_off))
GATE.add("kept-inflated", _breaking(_kept_inflated))
GATE.add("wider-product", _breaking(_wider_product))
GATE.add("wider-level", _breaking(_wider_level))
GATE.add("numbers-without-citations", _breaking(_numbers_without_citations))
GATE.add("one-trace", _breaking(_one_trace))
GATE.add("cited-twice", _breaking(_cited_twice))
