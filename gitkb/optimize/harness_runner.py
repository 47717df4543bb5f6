"""Run one evaluation of a candidate through a bundle's harness.

Executed as a script in a fresh process (its own process group, the target's
environment) by ``gitkb.optimize.worker``; it imports nothing from gitkb, so a
harness sees a clean interpreter. The request comes on stdin as JSON; the
response is written to the file the request names. Order per case: verify, then
benchmark only when verify passed, then profile only after a benchmark.
"""

import importlib.util
import inspect
import json
import math
import os
import sys
import traceback

# Profile payloads larger than this are written to a file and referenced.
MAX_INLINE_PROFILE_BYTES = 1 << 20


def _describe(exc: BaseException) -> str:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return f"{type(exc).__name__}: {exc}\n" + "".join(frames[-3:])[-2000:]


def _load_harness(path):
    # Helper modules beside the harness import as they would in the bundle folder.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("harness", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["harness"] = module
    spec.loader.exec_module(module)
    return module


def _build(harness, source, target):
    result = harness.build(source, target)
    if isinstance(result, dict) and "success" in result:
        return bool(result["success"]), result.get("artifact"), _as_list(result.get("diagnostics"))
    return True, result, []


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)]


def _verify(harness, artifact, case):
    result = harness.verify(artifact, case)
    if isinstance(result, dict):
        return (
            bool(result.get("passed")),
            _as_list(result.get("diagnostics")),
            result.get("metrics"),
        )
    return bool(result), [], None


def _benchmark(harness, artifact, case, repetitions):
    result = harness.benchmark(artifact, case, repetitions)
    extra = {}
    if isinstance(result, dict):
        samples = result.get("samples_us")
        extra = {k: result.get(k) for k in ("warmup_count", "cache_policy") if k in result}
    else:
        samples = result
    if not isinstance(samples, list | tuple) or not samples:
        raise ValueError(f"benchmark returned no samples ({type(samples).__name__})")
    clean = []
    for sample in samples:
        if isinstance(sample, bool) or not isinstance(sample, int | float):
            raise ValueError(f"benchmark sample {sample!r} is not a number")
        if not math.isfinite(sample) or sample <= 0:
            raise ValueError(f"benchmark sample {sample!r} is not finite and > 0")
        clean.append(float(sample))
    return clean, extra


def _takes_request(function) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in positional)


def _profile(harness, artifact, case, request):
    profile = harness.profile
    try:
        if _takes_request(profile):
            payload = profile(artifact, case, request)
        else:
            payload = profile(artifact, case)
    except Exception as exc:  # noqa: BLE001 - a profiler failure is data, not a crash
        return {"error": _describe(exc)}
    text = json.dumps(payload, default=repr)
    if len(text.encode("utf-8")) > MAX_INLINE_PROFILE_BYTES:
        os.makedirs(request["artifacts_dir"], exist_ok=True)
        spill = os.path.join(request["artifacts_dir"], f"profile-{case['case_id']}.json")
        with open(spill, "w", encoding="utf-8") as fh:
            fh.write(text)
        return {"spilled_to": spill, "bytes": len(text)}
    return json.loads(text)


def evaluate(request):
    response = {"build": {"success": False, "diagnostics": []}, "cases": []}
    try:
        harness = _load_harness(request["harness"])
    except BaseException as exc:  # noqa: BLE001 - report, do not crash
        response["build"]["diagnostics"].append("harness import failed: " + _describe(exc))
        return response
    try:
        ok, artifact, diagnostics = _build(harness, request["source"], request["target"])
    except Exception as exc:  # noqa: BLE001
        ok, artifact, diagnostics = False, None, ["build raised " + _describe(exc)]
    response["build"] = {"success": ok, "diagnostics": diagnostics}
    if not ok:
        return response
    profile_request = request.get("profile")
    for case in request["cases"]:
        entry = {"case_id": case["case_id"], "passed": False, "diagnostics": []}
        response["cases"].append(entry)
        try:
            passed, diagnostics, metrics = _verify(harness, artifact, case)
        except Exception as exc:  # noqa: BLE001
            passed, diagnostics, metrics = False, ["verify raised " + _describe(exc)], None
        entry["diagnostics"] += diagnostics
        entry["metrics"] = json.loads(json.dumps(metrics, default=repr))
        if not passed:
            continue
        try:
            samples, extra = _benchmark(harness, artifact, case, request["repetitions"])
        except Exception as exc:  # noqa: BLE001
            entry["diagnostics"].append("benchmark failed: " + _describe(exc))
            continue
        entry.update(passed=True, samples_us=samples, **extra)
        if profile_request is not None and hasattr(harness, "profile"):
            entry["profile"] = _profile(harness, artifact, case, profile_request)
    return response


def main():
    request = json.load(sys.stdin)
    response = evaluate(request)
    tmp = request["response"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(response, fh, default=repr)
    os.replace(tmp, request["response"])


if __name__ == "__main__":
    main()
