"""The reviewer's summary of a store as a static site: no external assets, no JavaScript.

``index.html`` holds the records by type, architecture and operator, the
admission history read from trailers, open conflicts and attestation counts;
``trace-<label>.html`` holds one mined trace's version ladder as an inline SVG
plot (latency per version, milestones marked, reverted versions greyed) and the
records that cite it.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gitkb.errors import writing
from gitkb.fs import atomic_write
from gitkb.record import scope_of
from gitkb.store import Store
from gitkb.store.layout import TRACE_REFS

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #1d232a; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { padding: .2em .8em; text-align: left; }
th { background: #f3f5f7; } tr:nth-child(even) td { background: #fafbfc; }
code { font: 12px ui-monospace, monospace; } .muted { color: #6e7781; }
.legend span { margin-right: 1.5em; } svg { background: #fff; border: 1px solid #d0d7de; }
"""

# Ladder point kinds, drawn in this order (later on top).
_KIND_STYLE = {
    "reverted": ("#c8ccd1", "reverted or rejected"),
    "kept": ("#57606a", "kept, not a new best"),
    "baseline": ("#0969da", "baseline"),
    "milestone": ("#1a7f37", "milestone (new best-so-far)"),
}


@dataclass(frozen=True)
class LadderPoint:
    version: str
    n: int
    geomean_us: float | None
    kind: str  # reverted, kept, baseline or milestone


def trace_ladder(store: Store, label: str) -> list[LadderPoint]:
    """The version ladder of a trace the store holds, rebuilt from its copied commits
    by the mining stages (ingest, ladder) exactly as mining saw it."""
    from gitkb.trace.ingest import ingest
    from gitkb.trace.ladder import build_ladder
    from gitkb.trace.sources import StoreTraces

    tip = store.repo.resolve(TRACE_REFS + label)
    if tip is None:
        return []
    rows = ingest(store.repo, tip, label, StoreTraces(store.view()).options(label)).rows
    ladder = build_ladder(rows)
    points = []
    for row, step in zip(rows, ladder.steps, strict=True):
        if step.kind == "baseline":
            kind = "baseline"
        elif step.kind in ("milestone", "mega"):
            kind = "milestone"
        elif step.kind == "rejected" and step.improve_pct is not None and not row.reverted:
            kind = "kept"  # measured and kept, but no new best
        else:
            kind = "reverted"
        # Carried-forward numbers describe the incumbent, not this version: not plotted.
        latency = None if row.carry_forward else row.geomean
        points.append(LadderPoint(row.version, row.n, latency, kind))
    return points


def ladder_svg(points: list[LadderPoint], width: int = 760, height: int = 300) -> str:
    """Latency per version; milestones green, the best-so-far as a step line."""
    measured = [p for p in points if p.geomean_us and p.geomean_us > 0]
    if not measured:
        return '<p class="muted">No version of this trace carries a usable latency.</p>'
    pad_l, pad_r, pad_t, pad_b = 64, 16, 16, 40
    n_lo, n_hi = min(p.n for p in points), max(p.n for p in points)
    y_lo = min(p.geomean_us for p in measured)
    y_hi = max(p.geomean_us for p in measured)
    log_lo, log_hi = math.log10(y_lo), math.log10(y_hi) if y_hi > y_lo else math.log10(y_lo) + 1

    def x(n: int) -> float:
        return pad_l + (n - n_lo) / max(1, n_hi - n_lo) * (width - pad_l - pad_r)

    def y(us: float) -> float:
        return pad_t + (log_hi - math.log10(us)) / (log_hi - log_lo) * (height - pad_t - pad_b)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="latency per version">',
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" '
        'stroke="#8c959f"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{height - pad_b}" stroke="#8c959f"/>',
    ]
    for us in (y_lo, math.sqrt(y_lo * y_hi), y_hi):
        parts.append(
            f'<text x="{pad_l - 6}" y="{y(us) + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#57606a">{us:.3g} us</text>'
        )
    for p in (points[0], points[-1]):
        parts.append(
            f'<text x="{x(p.n):.1f}" y="{height - pad_b + 16}" text-anchor="middle" '
            f'font-size="11" fill="#57606a">{html.escape(p.version)}</text>'
        )
    best: list[tuple[float, float]] = []
    for p in points:
        if p.kind in ("baseline", "milestone") and p.geomean_us:
            best.append((x(p.n), y(p.geomean_us)))
    if len(best) > 1:
        steps = [f"{best[0][0]:.1f},{best[0][1]:.1f}"]
        for (_, y0), (x1, y1) in zip(best, best[1:], strict=False):
            steps += [f"{x1:.1f},{y0:.1f}", f"{x1:.1f},{y1:.1f}"]
        parts.append(
            f'<polyline points="{" ".join(steps)}" fill="none" stroke="#1a7f37" '
            'stroke-width="1.5" stroke-dasharray="4 3"/>'
        )
    for kind, (color, _) in _KIND_STYLE.items():
        for p in measured:
            if p.kind != kind:
                continue
            radius = 5 if kind in ("milestone", "baseline") else 3.5
            parts.append(
                f'<circle cx="{x(p.n):.1f}" cy="{y(p.geomean_us):.1f}" r="{radius}" '
                f'fill="{color}"><title>{html.escape(p.version)}: {p.geomean_us:.4g} us '
                f"({kind})</title></circle>"
            )
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height - 6}" text-anchor="middle" font-size="12" '
        'fill="#57606a">version</text></svg>'
    )
    return "".join(parts)


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )


def _table(headers: list[str], rows: list[list[object]]) -> str:
    if not rows:
        return '<p class="muted">None.</p>'
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _legend() -> str:
    items = "".join(
        f'<span><svg width="12" height="12"><circle cx="6" cy="6" r="5" fill="{color}"/></svg> '
        f"{html.escape(label)}</span>"
        for color, label in _KIND_STYLE.values()
    )
    return f'<p class="legend">{items}</p>'


def _attestations(store: Store, tip: str) -> list[list[object]]:
    """One row per attested record: outcome counts and the retire hint, from the ledger."""
    from gitkb.warmstart.attest import parse_ledger, retire_hint

    rows = []
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
    rows = []
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


def build_site(store: Store, out: Path, ladders: dict[str, list[LadderPoint]]) -> list[Path]:
    """Write the site into ``out``; ``ladders`` maps a trace label to its version ladder."""
    tip = store.tip
    entries = store.view().entries()
    by_type = Counter(str(e.get("type")) for e in entries)
    by_arch = Counter(f"{scope_of(e).get('vendor')}/{scope_of(e).get('arch')}" for e in entries)
    by_operator = Counter(str(scope_of(e).get("operator_family") or "(none)") for e in entries)
    history = store.log()
    attest = _attestations(store, tip)
    labels = sorted(
        set(ladders) | {r.removeprefix(TRACE_REFS) for r in store.repo.refs(TRACE_REFS)}
    )

    trace_links = "".join(
        f'<li><a href="trace-{html.escape(label)}.html">{html.escape(label)}</a></li>'
        for label in labels
    )
    body = [
        f"<p>{len(entries)} records on main at <code>{tip[:12]}</code>; "
        f"{len(history)} admissions.</p>",
        "<h2>Records by type</h2>", _table(["type", "records"], sorted(by_type.items())),
        "<h2>Records by vendor/arch</h2>",
        _table(["vendor/arch", "records"], sorted(by_arch.items())),
        "<h2>Records by operator family</h2>",
        _table(["operator family", "records"], sorted(by_operator.items())),
        "<h2>Mined traces</h2>",
        f"<ul>{trace_links}</ul>" if labels else '<p class="muted">None.</p>',
        "<h2>Open conflicts</h2>",
        _table(["incoming", "existing", "reason", "queued"], _conflicts(store, tip)),
        "<h2>Attestations</h2>",
        _table(["record", "outcomes", "retire hint"], attest),
        "<h2>Admission history</h2>",
        _table(["commit", "time", "action", "record", "trace", "gates"],
               [[h["commit"][:12], h["time"], h["action"], h["trailers"].get("KB-Record", ""),
                 h["trailers"].get("KB-Trace", ""), h["trailers"].get("KB-Gates", "")]
                for h in history]),
    ]  # fmt: skip
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "index.html"]
        atomic_write(
            written[0], _page(f"gitkb store {store.location.name}", "".join(body)).encode()
        )
        for label in labels:
            cited = [
                [
                    h["trailers"].get("KB-Record", ""),
                    h["action"],
                    h["trailers"].get("KB-Trace-Commit", "")[:12],
                ]
                for h in history
                if h["trailers"].get("KB-Trace") == label
            ]
            page = "".join(
                [
                    '<p><a href="index.html">back to the store</a></p>',
                    "<h2>Version ladder</h2>",
                    _legend(),
                    ladder_svg(ladders.get(label, [])),
                    "<h2>Admissions from this trace</h2>",
                    _table(["record", "action", "trace commit"], cited),
                ]
            )
            path = out / f"trace-{label}.html"
            atomic_write(path, _page(f"trace {label}", page).encode())
            written.append(path)
    return written
