"""Parsers of native profiler output (ncu on nvidia, rocprofv3 on amd), usable on any machine.

Each parser turns the tool's CSV text into one summary: the kernel it measured,
its duration in microseconds, the counters read, and the counters that were
asked for but not reported (null with a diagnostic, never zero). Only rows
whose kernel name matches the filter count, and a capture of a known non-target
kernel (e.g. torch's RNG fill) is refused.
"""

from __future__ import annotations

import re

# Kernels a profiler catches first when no kernel-name filter is given.
NON_TARGET_KERNELS = frozenset({"distribution_elementwise_grid_stride_kernel"})

TIME_UNITS_TO_US = {
    "nsecond": 1e-3,
    "ns": 1e-3,
    "usecond": 1.0,
    "us": 1.0,
    "msecond": 1e3,
    "ms": 1e3,
    "second": 1e6,
    "s": 1e6,
}


def number(text: str) -> float | None:
    """A profiler's number ("1,024.5", "12") or None for n/a, blanks and words."""
    cleaned = text.strip().replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return None


def matches(kernel: str, pattern: str | None) -> bool:
    return pattern is None or re.search(pattern, kernel) is not None


def summary(tool: str, pattern: str | None) -> dict:
    return {
        "tool": tool,
        "kernel_filter": pattern,
        "kernel_name": None,
        "duration_us": None,
        "launches": 0,
        "metrics": {},
        "diagnostics": [],
    }
