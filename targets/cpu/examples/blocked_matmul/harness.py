"""Harness of the blocked-matmul example: checked against A @ B, timed with perf_counter_ns."""

import time

import numpy as np

WARMUP = 2


def _inputs(case):
    p = case["parameters"]
    rng = np.random.default_rng(p.get("seed", 0))
    a = rng.standard_normal((p["n"], p["k"]), dtype=np.float32)
    b = rng.standard_normal((p["k"], p["m"]), dtype=np.float32)
    return a, b


def build(kernel_source, target):
    namespace = {"__name__": "kernel"}
    try:
        exec(compile(kernel_source, "kernel.py", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - a broken candidate is a failed build
        return {"success": False, "artifact": None, "diagnostics": [repr(exc)]}
    return {"success": True, "artifact": namespace["matmul"], "diagnostics": []}


def verify(matmul, case):
    a, b = _inputs(case)
    got = matmul(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if got.shape != want.shape:
        return {"passed": False, "diagnostics": [f"shape {got.shape} != {want.shape}"]}
    err = float(np.max(np.abs(got - want)))
    passed = bool(np.allclose(got, want, rtol=1e-3, atol=1e-3))
    return {
        "passed": passed,
        "diagnostics": [] if passed else [f"max_abs_err {err:.3g}"],
        "metrics": {"max_abs_err": err},
    }


def benchmark(matmul, case, repetitions):
    a, b = _inputs(case)
    for _ in range(WARMUP):
        matmul(a, b)
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter_ns()
        matmul(a, b)
        samples.append((time.perf_counter_ns() - start) / 1000.0)
    return {"samples_us": samples, "warmup_count": WARMUP, "cache_policy": "warm"}
