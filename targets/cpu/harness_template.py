"""Harness template for the CPU backend (numpy or pure-Python kernels).

Copy it into a bundle as harness.py and fill in the marked parts: ENTRY (the
kernel's entry point), _inputs (arguments for a case) and _reference (the
correct output). Timing is perf_counter_ns over `repetitions` calls after
WARMUP calls; the CPU backend has no native profiler, so profile reports its
counters as null with the reason from targets/cpu/profiler.toml.
"""

import time

import numpy as np

ENTRY = "kernel"  # fill in: the kernel module's entry point
WARMUP = 2
RTOL, ATOL = 1e-5, 1e-6


def _inputs(case):  # fill in
    p = case["parameters"]
    rng = np.random.default_rng(p.get("seed", 0))
    return (rng.standard_normal(p["n"]),)


def _reference(*args):  # fill in
    return args[0] * 2


def build(kernel_source, target):
    namespace = {"__name__": "kernel"}
    try:
        exec(compile(kernel_source, "kernel.py", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - a broken candidate is a failed build
        return {"success": False, "artifact": None, "diagnostics": [repr(exc)]}
    if ENTRY not in namespace:
        return {"success": False, "artifact": None, "diagnostics": [f"no {ENTRY}()"]}
    return {"success": True, "artifact": namespace[ENTRY], "diagnostics": []}


def verify(kernel, case):
    args = _inputs(case)
    got, want = np.asarray(kernel(*args)), _reference(*args)
    if got.shape != want.shape:
        return {"passed": False, "diagnostics": [f"shape {got.shape} != {want.shape}"]}
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    passed = bool(np.allclose(got, want, rtol=RTOL, atol=ATOL))
    return {
        "passed": passed,
        "diagnostics": [] if passed else [f"max_abs_err {err:.3g}"],
        "metrics": {"max_abs_err": err},
    }


def benchmark(kernel, case, repetitions):
    args = _inputs(case)
    for _ in range(WARMUP):
        kernel(*args)
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter_ns()
        kernel(*args)
        samples.append((time.perf_counter_ns() - start) / 1000.0)
    return {"samples_us": samples, "warmup_count": WARMUP, "cache_policy": "warm"}


def profile(kernel, case, request):
    mapping = request.get("native_profiler", {})
    return {
        "tool": mapping.get("tool", "none"),
        "counters": {"instructions": None, "cache_misses": None},
        "diagnostics": [mapping.get("reason", "no native profiler on the CPU backend")],
    }
