"""Harness of the softmax example: float64 reference, float32 kernel, perf_counter_ns timing."""

import time

import numpy as np

WARMUP = 2


def _inputs(case):
    p = case["parameters"]
    rng = np.random.default_rng(p.get("seed", 0))
    return (rng.standard_normal((p["rows"], p["cols"])) * p.get("scale", 1.0)).astype(np.float32)


def _reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def build(kernel_source, target):
    namespace = {"__name__": "kernel"}
    exec(compile(kernel_source, "kernel.py", "exec"), namespace)
    return namespace["softmax"]


def verify(softmax, case):
    x = _inputs(case)
    with np.errstate(all="ignore"):
        got = softmax(x)
    want = _reference(x)
    finite = bool(np.all(np.isfinite(got)))
    err = float(np.max(np.abs(got - want))) if finite else None
    passed = finite and err <= 1e-5
    diagnostics = (
        []
        if passed
        else ["non-finite output (overflow)" if not finite else f"max_abs_err {err:.3g} > 1e-5"]
    )
    return {"passed": passed, "diagnostics": diagnostics, "metrics": {"max_abs_err": err}}


def benchmark(softmax, case, repetitions):
    x = _inputs(case)
    for _ in range(WARMUP):
        softmax(x)
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter_ns()
        softmax(x)
        samples.append((time.perf_counter_ns() - start) / 1000.0)
    return samples


def profile(softmax, case, request):
    # The CPU backend has no native profiler: counters are null, with the reason.
    return {
        "tool": request["native_profiler"].get("tool", "none"),
        "counters": {"dram_bytes": None, "achieved_occupancy": None},
        "diagnostics": [request["native_profiler"].get("reason", "no native profiler")],
    }
