"""rocprofv3 CSV output: ``kernel_trace.csv`` (one row per dispatch, nanosecond
timestamps) and ``counter_collection.csv`` (one row per dispatch and counter)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from gitkb.optimize.profilers import (
    NON_TARGET_KERNELS,
    matches,
    output_text,
    profiler_number,
    summary,
)


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def parse(
    kernel_trace: str,
    kernel_pattern: str | None,
    counters_csv: str | None = None,
    counters: Sequence[str] = (),
) -> dict:
    """Summarize the dispatches of the kernel matching ``kernel_pattern``."""
    out = summary("rocprofv3", kernel_pattern)
    dispatches = []
    for row in _rows(kernel_trace):
        name = row.get("Kernel_Name", "")
        if name in NON_TARGET_KERNELS:
            out["diagnostics"].append(f"skipped non-target kernel {name}")
            continue
        if not matches(name, kernel_pattern):
            continue
        start, end = (
            profiler_number(row.get("Start_Timestamp", "")),
            profiler_number(row.get("End_Timestamp", "")),
        )
        if start is None or end is None or end <= start:
            out["diagnostics"].append(f"dispatch of {name} without a valid time range")
            continue
        dispatches.append((name, (end - start) / 1000.0))
    if not dispatches:
        out["diagnostics"].append(f"no dispatch of a kernel matching {kernel_pattern!r}")
        return out
    out["kernel_name"] = dispatches[0][0]
    out["launches"] = len(dispatches)
    out["duration_us"] = sum(d for _, d in dispatches) / len(dispatches)
    values: dict[str, list[float]] = {}
    for row in _rows(counters_csv or ""):
        if not matches(row.get("Kernel_Name", ""), kernel_pattern):
            continue
        value = profiler_number(row.get("Counter_Value", ""))
        if value is not None:
            values.setdefault(row.get("Counter_Name", ""), []).append(value)
    for counter in counters:
        found = values.get(counter)
        if not found:
            out["metrics"][counter] = None
            out["diagnostics"].append(f"{counter}: not reported by this rocprofv3 run")
        else:
            out["metrics"][counter] = sum(found) / len(found)
    return out


def summarize(raw: object, kernel_pattern: str | None) -> dict:
    """The registry's interface: ``raw`` is ``{"kernel_trace": ..., "counter_collection":
    ...}`` (CSV text or absolute paths) or the kernel trace alone."""
    files: dict = raw if isinstance(raw, dict) else {"kernel_trace": raw}
    trace = output_text(files.get("kernel_trace"))
    if trace is None:
        raise ValueError("rocprofv3 output has no readable kernel_trace")
    counters = output_text(files.get("counter_collection"))
    named = files.get("counters")
    names = named if isinstance(named, list) else []
    return parse(trace, kernel_pattern, counters, [str(n) for n in names])
