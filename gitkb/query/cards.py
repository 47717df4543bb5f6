"""Technique cards in a query's answer: first for a broad question, with their evidence.

A question that names a family or a symptom but no operator and no record type is
broad: what it wants is which techniques paid off, and a card (``git kb curate
--cards``) answers that for many traces at once. So for a broad question the cards
that cite their evidence go ahead of the other hits, and each of those is labelled
``evidence_counts`` (attempts, kept, success rate, gains, cited records), so an agent
can tell a card backed by twelve traces from a hand-written one (which carries no
label, and keeps its rank: a GPU-wiki store answers as GPU-wiki's own tool does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # type-only: rank imports the pool, which this module's callers load
    from gitkb.query.rank import Hit
    from gitkb.query.scope import Scope

CARD_TYPE = "technique-card"
COUNTED = ("attempts", "kept", "success_rate_pct", "typical_gain_pct", "best_gain_pct")


def broad(scope: Scope) -> bool:
    """A family or a symptom asked about with no operator and no record type."""
    return bool(scope.family or scope.symptom) and scope.operator is None and scope.type is None


def cards_first(
    hits: list[Hit], scope: Scope, read: Callable[[list[str]], dict[str, dict]]
) -> list[Hit]:
    """``hits`` (ranked, best first) with the cards that cite their evidence moved ahead,
    in rank order, when the question is broad; ``read(paths)`` gives the records (only
    the cards' are read). A hand-written card keeps its rank."""
    if not broad(scope):
        return hits
    paths = [h.candidate.path for h in hits if h.candidate.type == CARD_TYPE]
    if not paths:
        return hits
    backed = {path for path, record in read(paths).items() if evidence_counts(record)}
    return sorted(hits, key=lambda h: h.candidate.path not in backed)


def evidence_counts(record: dict) -> dict | None:
    """What a computed card's numbers rest on: its counts and how many records it cites;
    None for a hand-written card (it cites none) and for any other record."""
    if record.get("type") != CARD_TYPE:
        return None
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    links = (record.get("retrieval") or {}).get("links") or {}
    cited = links.get("cited_records") if isinstance(links, dict) else None
    if not isinstance(cited, list) or not cited:
        return None
    return {**{k: payload.get(k) for k in COUNTED}, "cited_records": len(cited)}
