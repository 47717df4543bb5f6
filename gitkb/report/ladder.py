"""A mined trace's version ladder, rebuilt from the store's copy of the trace by the mining
stages, and drawn as an inline SVG: latency per version, milestones and the best-so-far
line, dead-ends marked, the reference kernels ringed."""

from __future__ import annotations

import html
import itertools
import math
from dataclasses import dataclass

from gitkb.layout import trace_ref
from gitkb.store import Store

# Ladder point kinds, drawn in this order (later on top): colour and legend text.
KIND_STYLE = {
    "reverted": ("#c8ccd1", "reverted or rejected"),
    "kept": ("#57606a", "kept, not a new best"),
    "deadend": ("#cf222e", "dead-end (a failed lever the trace states)"),
    "baseline": ("#0969da", "baseline"),
    "milestone": ("#1a7f37", "milestone (new best-so-far)"),
}
REFERENCE_STYLE = ("#8250df", "reference kernel")


@dataclass(frozen=True)
class LadderPoint:
    version: str
    n: int
    geomean_us: float | None
    kind: str  # one of KIND_STYLE
    reference: bool = False  # the terminal reference kernel, or a milestone's snapshot


def trace_ladder(store: Store, label: str) -> list[LadderPoint]:
    """The version ladder of a trace the store holds, rebuilt from its copied commits
    by the mining stages (ingest, ladder) exactly as mining saw it."""
    from gitkb.trace.ingest import ingest
    from gitkb.trace.ladder import build_ladder
    from gitkb.trace.sources import StoreTraces

    tip = store.repo.resolve(trace_ref(label))
    if tip is None:
        return []
    ingested = ingest(store.repo, tip, label, StoreTraces(store.view()).options(label))
    ladder = build_ladder(ingested.rows)
    snapshots = {s.n for s in ladder.milestones if s.kind == "mega"} & set(ingested.snapshots)
    points = []
    for row, step in zip(ingested.rows, ladder.steps, strict=True):
        if step.kind == "baseline":
            kind = "baseline"
        elif step.kind in ("milestone", "mega"):
            kind = "milestone"
        elif step.kind == "deadend":
            kind = "deadend"
        elif step.kind == "rejected" and step.improve_pct is not None and not row.reverted:
            kind = "kept"  # measured and kept, but no new best
        else:
            kind = "reverted"
        # Carried-forward numbers describe the incumbent, not this version: not plotted.
        latency = None if row.carry_forward else row.geomean
        reference = row.n == ladder.final or row.n in snapshots
        points.append(LadderPoint(row.version, row.n, latency, kind, reference))
    return points


LOG_SPAN = 10.0  # latencies spanning more than this factor get a log axis
CHAR_PX = 6.6  # about one character of the 11 px axis font


def format_us(us: float) -> str:
    """A latency as a reader writes it: ``850 us``, ``3.77 ms``, ``1.2 s`` (no e-notation)."""
    for scale, unit in ((1e6, "s"), (1e3, "ms")):
        if us >= scale:
            return f"{us / scale:.3g} {unit}"
    return f"{us:.3g} us" if us >= 0.01 else f"{us * 1e3:.3g} ns"


def latency_ticks(lo: float, hi: float) -> tuple[bool, list[float]]:
    """(log axis?, tick values) for latencies from ``lo`` to ``hi``: a span over ten times
    gets a log axis ticked at 1, 2 and 5 of each decade; a narrower one a linear axis at
    round steps. Never fewer than two ticks."""
    if hi <= lo:
        return False, [lo]
    if hi / lo > LOG_SPAN:
        ticks = [
            m * 10.0**e
            for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5)
        ]
        inside = [t for t in ticks if lo <= t <= hi]
        if len(inside) > 8:  # a wide span: decades only
            inside = [t for t in inside if f"{t:g}".lstrip("0.").startswith("1")]
        return True, inside if len(inside) >= 2 else [lo, hi]
    raw = (hi - lo) / 4
    step = 10.0 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first = math.ceil(lo / step) * step
    ticks = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
    return False, ticks if len(ticks) >= 2 else [lo, hi]


def ladder_svg(points: list[LadderPoint], width: int = 760, height: int = 300) -> str:
    """Latency per version; milestones green, the best-so-far as a step line, dead-ends red
    (on the axis when they carry no latency), reference kernels ringed. Latencies spanning
    more than ten times are drawn on a log axis; tick labels never use e-notation and the
    margin fits the longest."""
    measured = [p for p in points if p.geomean_us and p.geomean_us > 0]
    if not measured:
        return '<p class="muted">No version of this trace carries a usable latency.</p>'
    y_lo = min(p.geomean_us for p in measured)
    y_hi = max(p.geomean_us for p in measured)
    log_axis, ticks = latency_ticks(y_lo, y_hi)
    if y_hi <= y_lo:  # one latency: a band around it
        y_lo, y_hi = y_lo * 0.9, y_hi * 1.1
    labels = [format_us(t) for t in ticks]
    pad_l, pad_r, pad_t, pad_b = 16 + int(max(map(len, labels)) * CHAR_PX), 16, 16, 40
    n_lo, n_hi = min(p.n for p in points), max(p.n for p in points)
    scale = math.log10 if log_axis else (lambda v: v)
    top, bottom = scale(y_hi), scale(y_lo)
    floor = height - pad_b - 6  # where a dead-end without a latency is marked

    def x(n: int) -> float:
        return pad_l + (n - n_lo) / max(1, n_hi - n_lo) * (width - pad_l - pad_r)

    def y(us: float) -> float:
        return pad_t + (top - scale(us)) / (top - bottom) * (height - pad_t - pad_b)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="latency per version">',
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" '
        'stroke="#8c959f"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{height - pad_b}" stroke="#8c959f"/>',
    ]
    for us, text in zip(ticks, labels, strict=True):
        parts.append(
            f'<line x1="{pad_l - 4}" y1="{y(us):.1f}" x2="{pad_l}" y2="{y(us):.1f}" '
            'stroke="#8c959f"/>'
            f'<text x="{pad_l - 6}" y="{y(us) + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#57606a">{text}</text>'
        )
    if log_axis:
        parts.append(
            f'<text x="{pad_l + 4}" y="{pad_t + 10}" font-size="10" fill="#57606a">'
            "latency, log scale</text>"
        )
    for p in (points[0], points[-1]):
        parts.append(
            f'<text x="{x(p.n):.1f}" y="{height - pad_b + 16}" text-anchor="middle" '
            f'font-size="11" fill="#57606a">{html.escape(p.version)}</text>'
        )
    best = [(x(p.n), y(p.geomean_us)) for p in measured if p.kind in ("baseline", "milestone")]
    if len(best) > 1:
        steps = [f"{best[0][0]:.1f},{best[0][1]:.1f}"]
        for (_, y0), (x1, y1) in itertools.pairwise(best):
            steps += [f"{x1:.1f},{y0:.1f}", f"{x1:.1f},{y1:.1f}"]
        parts.append(
            f'<polyline points="{" ".join(steps)}" fill="none" stroke="#1a7f37" '
            'stroke-width="1.5" stroke-dasharray="4 3"/>'
        )
    for kind, (color, _) in KIND_STYLE.items():
        for p in points:
            if p.kind != kind or not (p.geomean_us or kind == "deadend"):
                continue
            cx, cy = x(p.n), y(p.geomean_us) if p.geomean_us else floor
            title = f"{p.version}: " + (f"{p.geomean_us:.4g} us" if p.geomean_us else "no latency")
            parts.append(_mark(kind, cx, cy, color, f"{title} ({kind})"))
    ring = REFERENCE_STYLE[0]
    for p in measured:
        if p.reference:
            parts.append(
                f'<circle cx="{x(p.n):.1f}" cy="{y(p.geomean_us):.1f}" r="9" fill="none" '
                f'stroke="{ring}" stroke-width="2"><title>{html.escape(p.version)}: reference '
                "kernel</title></circle>"
            )
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height - 6}" text-anchor="middle" font-size="12" '
        'fill="#57606a">version</text></svg>'
    )
    return "".join(parts)


def _mark(kind: str, cx: float, cy: float, color: str, title: str) -> str:
    title = html.escape(title)
    if kind == "deadend":  # a cross: a lever that failed
        d = 4.5
        return (
            f'<path d="M{cx - d:.1f},{cy - d:.1f}L{cx + d:.1f},{cy + d:.1f}M{cx - d:.1f},'
            f'{cy + d:.1f}L{cx + d:.1f},{cy - d:.1f}" stroke="{color}" stroke-width="2.5">'
            f"<title>{title}</title></path>"
        )
    radius = 5 if kind in ("milestone", "baseline") else 3.5
    return (
        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius}" fill="{color}">'
        f"<title>{title}</title></circle>"
    )


def legend() -> str:
    items = "".join(
        f'<span><svg width="12" height="12"><circle cx="6" cy="6" r="5" fill="{color}"/></svg> '
        f"{html.escape(label)}</span>"
        for color, label in KIND_STYLE.values()
    )
    color, label = REFERENCE_STYLE
    items += (
        f'<span><svg width="14" height="14"><circle cx="7" cy="7" r="5.5" fill="none" '
        f'stroke="{color}" stroke-width="2"/></svg> {label}</span>'
    )
    return f'<p class="legend">{items}</p>'
