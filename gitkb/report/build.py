"""The reviewer's summary of a store as a static site: no external assets, no JavaScript.

``index.html`` holds the records by type, architecture and operator, the technique
cards, the flywheel bench's plot (when given), the admission history read from
trailers, open conflicts and attestation counts; each card has a page listing the
records it cites (``site.cards``);
``trace-<label>.html`` holds one mined trace's version ladder (``site.ladder``) and the
records admitted from it; every such record links to ``record-<id>.html``, a page of its
own with what an agent is served and where the trace backs it.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path

from gitkb.errors import writing
from gitkb.gates.raw_isolation import served
from gitkb.layout import TRACE_REFS
from gitkb.record import scope_of
from gitkb.report import cards as card_pages
from gitkb.report.ladder import LadderPoint, ladder_svg, legend
from gitkb.report.pages import Link, page, record_page_name, table, trace_page_name
from gitkb.store import Store
from gitkb.util.files import atomic_write
from gitkb.warmstart.attest import parse_ledger, retire_hint

RECORD_ACTIONS = ("insert", "confirm", "conflict", "import", "retract", "unretract")


def _attestations(store: Store, tip: str) -> list[list[object]]:
    """One row per attested record: outcome counts and the retire hint, from the ledger."""
    rows: list[list[object]] = []
    for path, sha in store.repo.list_tree(tip, "ledger"):
        counts = parse_ledger(path, store.repo.blob(sha)).counts()
        if not counts["recalls"]:
            continue
        outcomes = ", ".join(
            f"{name} {counts[name]}"
            for name in ("validations", "failures", "not_reproduced", "inapplicable")
            if counts.get(name)
        )
        record_id = path.rsplit("/", 1)[-1].removesuffix(".jsonl")
        rows.append([record_id, outcomes, retire_hint(counts) or ""])
    return rows


def _conflicts(store: Store, tip: str) -> list[list[object]]:
    rows: list[list[object]] = []
    for path, sha in store.repo.list_tree(tip, "conflicts"):
        try:
            queued = json.loads(store.repo.blob(sha))
        except (json.JSONDecodeError, UnicodeDecodeError):
            rows.append([path, "?", "unreadable conflict file", "?"])
            continue
        if queued.get("resolution") is None:
            incoming = (queued.get("incoming_record") or {}).get("id", "?")
            rows.append([incoming, queued.get("existing_record_id"), queued.get("conflict_reason"),
                         queued.get("created")])  # fmt: skip
    return rows


def _record_link(record_id: str, linked: set[str]) -> object:
    return Link(record_id, record_page_name(record_id)) if record_id in linked else record_id


def _index_page(
    store: Store,
    tip: str,
    entries: list[dict],
    history: list[dict],
    labels: list[str],
    linked: set[str],
    extra: str = "",
) -> str:
    by_type = Counter(str(e.get("type")) for e in entries)
    by_arch = Counter(f"{scope_of(e).get('vendor')}/{scope_of(e).get('arch')}" for e in entries)
    by_operator = Counter(str(scope_of(e).get("operator_family") or "(none)") for e in entries)
    traces = [[Link(label, trace_page_name(label))] for label in labels]
    body = [
        f"<p>{len(entries)} records on main at <code>{tip[:12]}</code>; "
        f"{len(history)} admissions.</p>",
        "<h2>Records by type</h2>", table(["type", "records"], sorted(by_type.items())),
        "<h2>Records by vendor/arch</h2>",
        table(["vendor/arch", "records"], sorted(by_arch.items())),
        "<h2>Records by operator family</h2>",
        table(["operator family", "records"], sorted(by_operator.items())),
        "<h2>Mined traces</h2>", table(["trace"], traces),
        extra,
        "<h2>Open conflicts</h2>",
        table(["incoming", "existing", "reason", "queued"], _conflicts(store, tip)),
        "<h2>Attestations</h2>",
        table(["record", "outcomes", "retire hint"], _attestations(store, tip)),
        "<h2>Admission history</h2>",
        table(["commit", "time", "action", "record", "trace", "gates"],
              [[h["commit"][:12], h["time"], h["action"],
                _record_link(h["trailers"].get("KB-Record", ""), linked),
                h["trailers"].get("KB-Trace", ""), h["trailers"].get("KB-Gates", "")]
               for h in history]),
    ]  # fmt: skip
    return page(f"gitkb store {store.location.name}", "".join(body))


def _trace_page(label: str, points: list[LadderPoint], admitted: list[dict]) -> str:
    rows = [
        [Link(r["id"], record_page_name(r["id"])), r["type"], r["version"], r["action"],
         r["commit"][:12]]
        for r in admitted
    ]  # fmt: skip
    references = [p.version for p in points if p.reference]
    deadends = [p.version for p in points if p.kind == "deadend"]
    body = [
        '<p><a href="index.html">back to the store</a></p>',
        "<h2>Version ladder</h2>",
        legend(),
        ladder_svg(points),
        f"<p>Reference kernel: {html.escape(', '.join(references) or 'none')}. "
        f"Dead-ends: {html.escape(', '.join(deadends) or 'none')}.</p>",
        "<h2>Records admitted from this trace</h2>",
        table(["record", "type", "version", "action", "trace commit"], rows),
    ]
    return page(f"trace {label}", "".join(body))


def _record_page(record: dict, label: str, history: list[dict]) -> str:
    raw = (record.get("evidence") or {}).get("raw") or {}
    rank = (record.get("worth") or {}).get("rank") or {}
    gain = (record.get("worth") or {}).get("gain") or {}
    facts = [
        ["type", record.get("type")],
        ["episode key", record.get("episode_key")],
        ["tier / score", f"{rank.get('tier')} / {rank.get('score')}"],
        ["gain", f"{gain.get('pct')} % ({gain.get('basis')})"],
        ["trace", Link(label, trace_page_name(label)) if label else ""],
        ["version / commit", f"{raw.get('version')} / {str(raw.get('git_commit'))[:12]}"],
        ["journal", ((raw.get("evidence_extra") or {}).get("journal")) or ""],
    ]
    admissions = [[h["commit"][:12], h["time"], h["action"]] for h in history]
    body = [
        '<p><a href="index.html">back to the store</a></p>',
        table(["field", "value"], facts),
        "<h2>Admissions</h2>",
        table(["commit", "time", "action"], admissions),
        "<h2>What an agent is served</h2>",
        f"<pre>{html.escape(json.dumps(served(record), indent=1, ensure_ascii=False))}</pre>",
    ]
    return page(f"record {record.get('id')}", "".join(body))


def build_site(
    store: Store, out: Path, ladders: dict[str, list[LadderPoint]], flywheel: dict | None = None
) -> list[Path]:
    """Write the site into ``out``; ``ladders`` maps a trace label to its version ladder,
    ``flywheel`` is a ``bench/flywheel.py --json`` document to plot (None: not given)."""
    tip = store.tip
    view = store.view()
    entries = view.entries()
    history = store.log()
    labels = sorted(
        set(ladders) | {r.removeprefix(TRACE_REFS) for r in store.repo.refs(TRACE_REFS)}
    )
    admitted: dict[str, list[dict]] = {label: [] for label in labels}
    records: dict[str, tuple[dict, str]] = {}
    for h in reversed(history):
        record_id, label = h["trailers"].get("KB-Record", ""), h["trailers"].get("KB-Trace")
        if h["action"] not in RECORD_ACTIONS or label not in admitted or record_id not in view:
            continue
        if record_id not in records:
            records[record_id] = (view.read_record(record_id).data or {}, label)
        data = records[record_id][0]
        admitted[label].append({
            "id": record_id, "type": data.get("type"), "action": h["action"],
            "version": ((data.get("evidence") or {}).get("raw") or {}).get("version"),
            "commit": h["trailers"].get("KB-Trace-Commit", ""),
        })  # fmt: skip
    cards = card_pages.live_cards(view)
    linked = set(records) | {c["id"] for c in cards}
    extra = "".join([
        "<h2>Technique cards</h2>", card_pages.cards_table(cards),
        "<h2>Flywheel (bench/flywheel.py)</h2>", card_pages.flywheel_section(flywheel),
    ])  # fmt: skip
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "index.html"]
        index = _index_page(store, tip, entries, history, labels, linked, extra)
        atomic_write(written[0], index.encode())
        for card in cards:
            path = out / record_page_name(card["id"])
            atomic_write(path, card_pages.card_page(card, view, linked).encode())
            written.append(path)
        for label in labels:
            path = out / trace_page_name(label)
            atomic_write(path, _trace_page(label, ladders.get(label, []), admitted[label]).encode())
            written.append(path)
        for record_id, (data, label) in sorted(records.items()):
            mine = [h for h in history if h["trailers"].get("KB-Record") == record_id]
            path = out / record_page_name(record_id)
            atomic_write(path, _record_page(data, label, mine).encode())
            written.append(path)
    return written
