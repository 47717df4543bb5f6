"""Harness template for the nvidia backend (Triton or any CUDA-launching Python kernel).

Copy it into a bundle as harness.py and fill in the three marked functions:
_inputs (tensors for a case), _reference (the correct output) and ENTRY (the
kernel's entry point name). Timing uses CUDA events after warm-up; profile runs
this file under ncu (targets/nvidia/profiler.toml) in a child process.
"""

import json
import os
import subprocess
import sys

ENTRY = "kernel"  # fill in: the kernel module's entry point
KERNEL_REGEX = ".*"  # fill in: a regex matching the GPU kernel's name, for ncu's filter
WARMUP = 10


def _inputs(case):  # fill in
    import torch

    n = case["parameters"]["n"]
    return (torch.randn(n, device="cuda"),)


def _reference(*args):  # fill in
    return args[0] * 2


_SOURCE = {}


def build(kernel_source, target):
    _SOURCE["text"] = kernel_source
    namespace = {"__name__": "kernel"}
    try:
        exec(compile(kernel_source, "kernel.py", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001
        return {"success": False, "artifact": None, "diagnostics": [repr(exc)]}
    return {"success": True, "artifact": namespace[ENTRY], "diagnostics": []}


def verify(kernel, case):
    import torch

    args = _inputs(case)
    got, want = kernel(*args), _reference(*args)
    err = float((got - want).abs().max())
    passed = bool(torch.allclose(got, want, rtol=1e-3, atol=1e-3))
    return {
        "passed": passed,
        "diagnostics": [] if passed else [f"max_abs_err {err:.3g}"],
        "metrics": {"max_abs_err": err},
    }


def benchmark(kernel, case, repetitions):
    import torch

    args = _inputs(case)
    for _ in range(WARMUP):
        kernel(*args)
    torch.cuda.synchronize()
    samples = []
    for _ in range(repetitions):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        kernel(*args)
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return {"samples_us": samples, "warmup_count": WARMUP, "cache_policy": "warm"}


def profile(kernel, case, request):
    mapping = request.get("native_profiler", {})
    if mapping.get("tool") != "ncu":
        return {"error": f"no ncu mapping in the request: {mapping}"}
    from gitkb.optimize.profilers import ncu

    metrics = mapping.get("metrics", [])
    argv = [a.format(kernel_regex=KERNEL_REGEX, metrics=",".join(metrics)) for a in mapping["argv"]]
    os.makedirs(request["artifacts_dir"], exist_ok=True)
    kernel_file = os.path.join(request["artifacts_dir"], "kernel.py")
    with open(kernel_file, "w") as fh:
        fh.write(_SOURCE["text"])
    script = [sys.executable, os.path.abspath(__file__), "--run-once", json.dumps(case)]
    done = subprocess.run(
        argv + script,
        capture_output=True,
        text=True,
        env=dict(os.environ, GITKB_KERNEL_FILE=kernel_file),
    )
    with open(os.path.join(request["artifacts_dir"], f"ncu-{case['case_id']}.csv"), "w") as fh:
        fh.write(done.stdout)
    return ncu.parse(done.stdout, KERNEL_REGEX, metrics)


if __name__ == "__main__" and sys.argv[1:2] == ["--run-once"]:
    # Under the profiler: one launch of the kernel for the case, nothing else.
    import pathlib

    source = pathlib.Path(os.environ["GITKB_KERNEL_FILE"]).read_text()
    kernel = build(source, {})["artifact"]
    kernel(*_inputs(json.loads(sys.argv[2])))
