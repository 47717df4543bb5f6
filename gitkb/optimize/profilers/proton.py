"""Triton's Proton profiler: the ``.hatchet`` JSON tree it writes when a session finalizes.

The document is a list whose first element is the root node (the rest is device
metadata), or the root node itself. A node is ``{"frame": {"name", "type"},
"metrics": {"count", "time (ns)", ...}, "children": [...]}``; a node's metrics are
its own, so kernel launches are the leaves that carry a time (a name under
several scopes is summed). The main kernel is the leaf matching the kernel
filter with the most time (the leaf with the most time, without a filter); every
other leaf is wrapper-side or helper-kernel time, reported apart.
"""

from __future__ import annotations

import json

from gitkb.optimize.profilers import NON_TARGET_KERNELS, matches, output_text, summary

TIME_KEYS_TO_US = {"time (ns)": 1e-3, "time (us)": 1.0, "time (ms)": 1e3, "time (s)": 1e6}


def _root(document: object) -> dict:
    if isinstance(document, list):
        document = next((n for n in document if isinstance(n, dict) and "frame" in n), None)
    if not isinstance(document, dict) or "frame" not in document:
        raise ValueError("no Proton tree (a node with a frame) in the document")
    return document


def _own_time_us(metrics: dict) -> float | None:
    for key, scale in TIME_KEYS_TO_US.items():
        value = metrics.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) * scale
    return None


def _leaves(node: dict, found: dict[str, list[float]]) -> None:
    children = [c for c in node.get("children") or [] if isinstance(c, dict)]
    if children:
        for child in children:
            _leaves(child, found)
        return
    name = str((node.get("frame") or {}).get("name", ""))
    metrics = node.get("metrics") or {}
    time_us = _own_time_us(metrics)
    if time_us is None or name.startswith("__proton"):
        return
    count = metrics.get("count")
    entry = found.setdefault(name, [0.0, 0])
    entry[0] += time_us
    entry[1] += int(count) if isinstance(count, int | float) and count > 0 else 1


def summarize(raw: object, kernel_pattern: str | None) -> dict:
    """The registry's interface: ``raw`` is the hatchet document, its JSON text, or the
    absolute path of the ``.hatchet`` file."""
    document = raw
    if isinstance(raw, str):
        text = output_text(raw)
        if text is None:
            raise ValueError("Proton output is neither a document nor a readable absolute path")
        document = json.loads(text)
    return parse(document, kernel_pattern)


def parse(document: object, kernel_pattern: str | None) -> dict:
    """Summarize a hatchet document: the main kernel's time per launch, and the rest."""
    out = summary("proton", kernel_pattern)
    found: dict[str, list[float]] = {}
    _leaves(_root(document), found)
    for name in [n for n in found if n in NON_TARGET_KERNELS]:
        out["diagnostics"].append(f"skipped non-target kernel {name}")
        del found[name]
    kernels: list[dict] = [
        {"name": name, "time_us": time_us, "count": count}
        for name, (time_us, count) in sorted(found.items(), key=lambda kv: -kv[1][0])
    ]
    out["kernels"] = kernels
    candidates = [k for k in kernels if matches(k["name"], kernel_pattern)]
    if not candidates:
        out["diagnostics"].append(f"no kernel matching {kernel_pattern!r} in the Proton tree")
        return out
    main = candidates[0]
    total = sum(k["time_us"] for k in kernels)
    out.update(
        kernel_name=main["name"],
        launches=main["count"],
        duration_us=main["time_us"] / main["count"],
        metrics={
            "main_kernel_us": main["time_us"],
            "non_main_kernel_us": total - main["time_us"],
            "kernel_time_us": total,
        },
    )
    return out
