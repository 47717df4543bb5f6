"""Nsight Compute CSV (``ncu --csv --page raw``): one row per profiled kernel launch.

The text may start with ``==PROF==`` log lines; the header row starts with
``"ID"``, and a units row (first cell empty) may follow it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from gitkb.optimize.profilers import (
    NON_TARGET_KERNELS,
    TIME_UNITS_TO_US,
    matches,
    output_text,
    profiler_number,
    summary,
)

DURATION = "gpu__time_duration.sum"


def parse(text: str, kernel_pattern: str | None, metrics: Sequence[str] = ()) -> dict:
    """Summarize the launches of the kernel matching ``kernel_pattern``; ``metrics`` are the
    counters that were requested (missing or n/a ones come back null, with a diagnostic)."""
    out = summary("ncu", kernel_pattern)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        out["diagnostics"].append("no ncu CSV header found")
        return out
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], rows[1:]
    units = {}
    if body and body[0] and body[0][0] == "":
        units = dict(zip(header, body[0], strict=False))
        body = body[1:]
    launches = []
    for row in body:
        record = dict(zip(header, row, strict=False))
        name = record.get("Kernel Name", "")
        if name in NON_TARGET_KERNELS:
            out["diagnostics"].append(f"skipped non-target kernel {name}")
            continue
        if matches(name, kernel_pattern):
            launches.append(record)
    if not launches:
        out["diagnostics"].append(f"no launch of a kernel matching {kernel_pattern!r}")
        return out
    out["kernel_name"] = launches[0]["Kernel Name"]
    out["launches"] = len(launches)
    wanted = list(dict.fromkeys([DURATION, *metrics]))
    for metric in wanted:
        read = [profiler_number(r.get(metric, "")) for r in launches]
        values = [v for v in read if v is not None]
        if metric not in header or len(values) != len(read):
            out["metrics"][metric] = None
            out["diagnostics"].append(f"{metric}: not reported by this ncu run")
            continue
        scale = TIME_UNITS_TO_US.get(units.get(metric, ""), None) if metric == DURATION else None
        mean = sum(values) / len(values)
        out["metrics"][metric] = mean
        if metric == DURATION:
            if scale is None:
                out["diagnostics"].append(f"{metric}: unknown unit {units.get(metric)!r}")
            else:
                out["duration_us"] = mean * scale
    return out


def summarize(raw: object, kernel_pattern: str | None) -> dict:
    """The registry's interface: ``raw`` is the CSV text, or the absolute path of the file."""
    text = output_text(raw)
    if text is None:
        raise ValueError("ncu output is neither CSV text nor a readable absolute path")
    return parse(text, kernel_pattern)
