"""Parsers of profiler output (ncu on nvidia, rocprofv3 on amd, Triton's Proton), usable on
any machine, and the step that applies them to what a harness's ``profile`` returned.

One file per tool, each with ``summarize(raw, kernel_pattern) -> dict``; ``REGISTRY``
names them (one line each). A summary holds the kernel measured, its duration in
microseconds, the counters read, and the counters asked for but not reported
(null with a diagnostic, never zero). Only rows whose kernel name matches the
filter count, and a capture of a known non-target kernel (e.g. torch's RNG fill)
is refused.

A harness hands raw output over in its profile payload under ``raw``, keyed by
tool: ``{"raw": {"proton": <hatchet JSON or its path>, "ncu": <CSV text or path>,
"rocprofv3": {"kernel_trace": ..., "counter_collection": ...}}}``; a ``.hatchet``
file among ``artifacts`` counts as Proton output. ``normalize`` adds each parsed
summary under ``parsed`` and, when the payload names no ``duration_us``, takes the
native profiler's duration, else Proton's main-kernel time per launch.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path
from typing import Protocol, runtime_checkable

from gitkb.util.resources import data_dir

REGISTRY: dict[str, str] = {
    "ncu": "gitkb.optimize.profilers.ncu",
    "rocprofv3": "gitkb.optimize.profilers.rocprof",
    "proton": "gitkb.optimize.profilers.proton",
}


@runtime_checkable
class ProfilerModule(Protocol):
    """What a module named in ``REGISTRY`` holds (tests/unit/test_plugins.py checks each)."""

    def summarize(self, raw: object, kernel_pattern: str | None) -> dict: ...


NATIVE = ("ncu", "rocprofv3")  # hardware profilers: their duration wins over Proton's

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
MAX_RAW_BYTES = 64 << 20


def profiler_number(text: str) -> float | None:
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


def output_text(raw: object) -> str | None:
    """Raw text output, or the text of the absolute path it names; None when neither."""
    if not isinstance(raw, str):
        return None
    if raw.startswith("/") and "\n" not in raw:
        path = Path(raw)
        if path.is_file() and path.stat().st_size <= MAX_RAW_BYTES:
            return path.read_text(encoding="utf-8", errors="replace")
        return None
    return raw


def profiler_mapping(backend: str) -> dict:
    """``targets/<backend>/profiler.toml``: which native profiler the backend uses."""
    path = data_dir("targets") / backend / "profiler.toml"
    if not path.is_file():
        return {"tool": "none", "reason": f"no profiler mapping for backend {backend!r}"}
    return tomllib.loads(path.read_text(encoding="utf-8")).get("native_profiler", {})


def _raw_outputs(payload: dict) -> dict:
    raw = dict(payload["raw"]) if isinstance(payload.get("raw"), dict) else {}
    artifacts = payload.get("artifacts")
    if isinstance(artifacts, dict) and "proton" not in raw:
        hatchet = [v for v in artifacts.values() if isinstance(v, str) and v.endswith(".hatchet")]
        if hatchet:
            raw["proton"] = hatchet[0]
    return {tool: value for tool, value in raw.items() if tool in REGISTRY}


def _kernel_pattern(payload: dict) -> str | None:
    scope = payload.get("scope")
    for value in (payload.get("kernel_filter"), isinstance(scope, dict) and scope.get("kernel")):
        if isinstance(value, str) and value:
            try:
                re.compile(value)
            except re.error:
                return re.escape(value)
            return value
    return None


def normalize(payload: object) -> object:
    """``payload`` with the raw profiler output it carries parsed (see the module docstring)."""
    if not isinstance(payload, dict):
        return payload
    outputs = _raw_outputs(payload)
    if not outputs:
        return payload
    pattern = _kernel_pattern(payload)
    parsed = {}
    for tool, raw in outputs.items():
        module = importlib.import_module(REGISTRY[tool])
        try:
            parsed[tool] = module.summarize(raw, pattern)
        except (ValueError, TypeError, KeyError, OSError) as exc:
            parsed[tool] = {**summary(tool, pattern), "diagnostics": [f"unreadable: {exc}"]}
    out = dict(payload, parsed=parsed)
    if not _is_duration(payload.get("duration_us")):
        for tool in (*NATIVE, "proton"):
            if tool in parsed and _is_duration(parsed[tool].get("duration_us")):
                out["duration_us"] = parsed[tool]["duration_us"]
                out["duration_source"] = tool
                break
    return out


def _is_duration(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def evidence_line(profile: dict | None) -> str:
    """A compact line of a case's parsed profile for the reviewer's log ("" when none)."""
    if not isinstance(profile, dict):
        return ""
    parts = []
    for tool, found in (profile.get("parsed") or {}).items():
        if found.get("duration_us") is None:
            parts.append(f"{tool}: {'; '.join(found.get('diagnostics', [])[:1]) or 'no data'}")
            continue
        text = f"{tool} {found['kernel_name']} {found['duration_us']:.3f} us x{found['launches']}"
        other = found.get("metrics", {}).get("non_main_kernel_us")
        if other:
            text += f", other kernels {other:.3f} us"
        parts.append(text)
    if not parts and _is_duration(profile.get("duration_us")):
        parts.append(f"duration {profile['duration_us']:.3f} us")
    return "; ".join(parts)
