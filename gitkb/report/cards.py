"""The site's technique cards (each with the records it cites) and the flywheel plot.

A card's page lists its numbers and every supporting record, linked to that record's
page when the site has one; the index lists the live cards. The flywheel plot draws a
``bench/flywheel.py --json`` document: per shape, the evaluations the cold and the warm
run needed to reach the cold run's final speedup, with both finals.
"""

from __future__ import annotations

import html
import json

from gitkb.report.pages import Link, page, record_page_name, table
from gitkb.store.view import StoreView

CARD_TYPE = "technique-card"
COLD, WARM = "#8c959f", "#1a7f37"


def live_cards(view: StoreView) -> list[dict]:
    """The live computed technique cards (those citing records), by id."""
    out = []
    for entry in view.entries():
        if entry.get("type") != CARD_TYPE or entry.get("status") in ("deprecated", "superseded"):
            continue
        data = view.read_record(entry["id"]).data
        cited = ((data or {}).get("retrieval") or {}).get("links") or {}
        if data is not None and cited.get("cited_records"):
            out.append(data)
    return out


def _cited(card: dict) -> list[str]:
    return list(((card.get("retrieval") or {}).get("links") or {}).get("cited_records") or [])


def cards_table(cards: list[dict]) -> str:
    rows = []
    for card in cards:
        payload = card.get("payload") or {}
        rows.append([
            Link(card["id"], record_page_name(card["id"])), payload.get("technique"),
            payload.get("attempts"), payload.get("kept"), payload.get("success_rate_pct"),
            payload.get("typical_gain_pct"), payload.get("best_gain_pct"), len(_cited(card)),
        ])  # fmt: skip
    headers = ["card", "technique", "attempts", "kept", "success %", "typical gain %",
               "best gain %", "supporting records"]  # fmt: skip
    return table(headers, rows)


def card_page(card: dict, view: StoreView, linked: set[str]) -> str:
    """One card: its numbers, its caveats, and each supporting record with what it says."""
    payload = card.get("payload") or {}
    facts = [[name, payload.get(name)] for name in (
        "technique", "what", "when", "attempts", "kept", "success_rate_pct",
        "typical_gain_pct", "best_gain_pct")]  # fmt: skip
    supersedes = ((card.get("retrieval") or {}).get("links") or {}).get("supersedes") or []
    if supersedes:
        facts.append(["supersedes", ", ".join(supersedes)])
    rows = []
    for record_id in _cited(card):
        data = view.read_record(record_id).data or {}
        gain = ((data.get("worth") or {}).get("gain") or {}).get("pct")
        said = (data.get("payload") or {}).get("change") or (data.get("payload") or {}).get(
            "attempted"
        )
        raw = (data.get("evidence") or {}).get("raw") or {}
        scope = (data.get("retrieval") or {}).get("scope") or {}
        target = Link(record_id, record_page_name(record_id)) if record_id in linked else record_id
        rows.append([target, data.get("type"), data.get("status"), scope.get("product"),
                     raw.get("source_repo"), gain, said])  # fmt: skip
    body = [
        '<p><a href="index.html">back to the store</a></p>',
        table(["field", "value"], facts),
        "<h2>Caveats (the anti-strategies' stated conditions, verbatim)</h2>",
        table(["caveat"], [[c] for c in payload.get("caveats") or []]),
        "<h2>Supporting records</h2>",
        table(["record", "type", "status", "page", "trace", "gain %", "change"], rows),
        "<h2>The card as stored</h2>",
        f"<pre>{html.escape(json.dumps(card, indent=1, ensure_ascii=False))}</pre>",
    ]
    return page(f"technique card {card.get('id')}", "".join(body))


def flywheel_svg(document: dict, width: int = 760, bar_h: int = 12) -> str:
    """Evaluations to reach the cold final, cold and warm, per shape, with the finals."""
    runs = document.get("runs") or []
    pairs = [(c, w) for c, w in zip(runs[::2], runs[1::2], strict=False)]
    if not pairs:
        return '<p class="muted">The flywheel document holds no runs.</p>'
    most = max(max(len(c["evaluations"]), len(w["evaluations"])) for c, w in pairs) or 1
    pad_l, pad_r, row_h = 230, 170, 2 * bar_h + 14
    height = 30 + row_h * len(pairs) + 30
    scale = (width - pad_l - pad_r) / most
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="flywheel bench">'
    ]
    for i, (cold, warm) in enumerate(pairs):
        top = 24 + i * row_h
        label = f"{cold['family']} {cold['shape']}" + (" (store empty)" if warm.get(
            "store_empty") else "")  # fmt: skip
        parts.append(f'<text x="{pad_l - 8}" y="{top + bar_h + 4}" text-anchor="end" '
                     f'font-size="11" fill="#24292f">{html.escape(label)}</text>')  # fmt: skip
        for j, (run, color) in enumerate(((cold, COLD), (warm, WARM))):
            reach = run.get("to_reach")
            spent = reach if reach is not None else len(run["evaluations"])
            y = top + j * (bar_h + 2)
            text = (f"{run['mode']}: {'never' if reach is None else reach} of "
                    f"{len(run['evaluations'])} evals, final {run['final']:.3g}x")  # fmt: skip
            parts.append(f'<rect x="{pad_l}" y="{y}" width="{max(1.0, spent * scale):.1f}" '
                         f'height="{bar_h}" fill="{color}"><title>{html.escape(text)}</title>'
                         "</rect>")  # fmt: skip
            parts.append(f'<text x="{pad_l + spent * scale + 6:.1f}" y="{y + bar_h - 2}" '
                         f'font-size="10" fill="#57606a">{html.escape(text)}</text>')  # fmt: skip
    ratio = document.get("ratio")
    shown = f"{ratio:.2f}x" if isinstance(ratio, (int, float)) else "n/a"
    parts.append(f'<text x="{pad_l}" y="{height - 10}" font-size="12" fill="#24292f">'
                 f"warm/cold evaluations to the cold final: {shown} (grey cold, green warm)"
                 "</text></svg>")  # fmt: skip
    return "".join(parts)


def flywheel_section(document: dict | None) -> str:
    if document is None:
        return ('<p class="muted">No flywheel figures given (git kb report --flywheel FILE, '
                "from python bench/flywheel.py --json FILE).</p>")  # fmt: skip
    missed = document.get("missed") or []
    verdict = "MISSED: " + "; ".join(missed) if missed else "met its target"
    return flywheel_svg(document) + f"<p>{html.escape(verdict)}</p>"
