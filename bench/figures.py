"""One machine-readable line per headline figure, so bench/run_all.py can tabulate every
bench script without parsing its human output."""

from __future__ import annotations

import json

PREFIX = "figure: "


def figure(name: str, value: float, unit: str, target: float, better: str) -> None:
    """Print ``name``'s measured ``value`` against ``target``; ``better`` is 'lower' or 'higher'."""
    met = value <= target if better == "lower" else value >= target
    print(PREFIX + json.dumps({"name": name, "value": round(value, 4), "unit": unit,
                               "target": target, "better": better, "met": met}))  # fmt: skip
