"""The process one harness evaluation runs in: build, then verify, benchmark and profile each case.

Started by ``gitkb.optimize.worker`` through ``gitkb.util.runner`` (a fresh interpreter,
the target's environment); it imports nothing from gitkb, so a harness sees a
clean interpreter. The request comes on stdin as JSON; the response is written
to the file the request names. Order per case: verify, then benchmark only when
verify passed, then profile only after a benchmark.

Verdicts are strict: only ``True`` or ``{"passed": true}`` (a real boolean) passes
``verify``, and a ``build`` that answers with ``success`` must say ``True``. Any
other value fails, and the diagnostic names the value received, so a harness
returning ``"FAIL"`` or ``{"passed": "false"}`` cannot promote a wrong kernel.
"""

import hashlib
import importlib.util
import inspect
import json
import math
import os
import re
import sys
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

# Profile payloads larger than this are written to a file and referenced (TLX's limit).
MAX_INLINE_PROFILE_BYTES = 1_000_000
PASSES = "only True or {'passed': True} passes"


def _describe(exc: BaseException) -> str:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return f"{type(exc).__name__}: {exc}\n" + "".join(frames[-3:])[-2000:]


def _shown(value: object) -> str:
    """A value as a diagnostic names it: its repr (clipped) and its type."""
    text = repr(value)
    if len(text) > 120:
        text = text[:117] + "..."
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    return f"{text} ({name})"


def _load_harness(path: str) -> ModuleType:
    # Helper modules beside the harness import as they would in the bundle folder.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("harness", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module can be loaded from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["harness"] = module
    spec.loader.exec_module(module)
    return module


def _as_list(value: object) -> list[str]:
    if value is None or (isinstance(value, str) and not value):
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)]


def _build(harness: ModuleType, source: str, target: str) -> tuple[bool, object, list[str]]:
    result = harness.build(source, target)
    if isinstance(result, dict) and "success" in result:
        diagnostics = _as_list(result.get("diagnostics"))
        success = result["success"]
        if success is True:
            return True, result.get("artifact"), diagnostics
        if success is not False:
            diagnostics.insert(
                0, f"build returned success={_shown(success)}; only success=True builds"
            )
        return False, None, diagnostics
    if result is False:
        return False, None, ["build returned False"]
    return True, result, []


def _verify(harness: ModuleType, artifact: object, case: dict) -> tuple[bool, list[str], object]:
    result = harness.verify(artifact, case)
    if isinstance(result, dict):
        diagnostics = _as_list(result.get("diagnostics"))
        passed = result.get("passed")
        if passed is not True and passed is not False:
            diagnostics.insert(0, f"verify returned passed={_shown(passed)}; {PASSES}")
        return passed is True, diagnostics, result.get("metrics")
    if result is True:
        return True, [], None
    if result is False:
        return False, [], None
    return False, [f"verify returned {_shown(result)}; {PASSES}"], None


def _benchmark(
    harness: ModuleType, artifact: object, case: dict, repetitions: int
) -> tuple[list[float], dict]:
    result = harness.benchmark(artifact, case, repetitions)
    extra = {}
    if isinstance(result, dict):
        samples = result.get("samples_us")
        extra = {k: result.get(k) for k in ("warmup_count", "cache_policy") if k in result}
    else:
        samples = result
    if not isinstance(samples, list | tuple) or not samples:
        raise ValueError(f"benchmark returned no samples: {_shown(samples)}")
    clean = []
    for sample in samples:
        if isinstance(sample, bool) or not isinstance(sample, int | float):
            raise ValueError(f"benchmark sample {_shown(sample)} is not a number")
        if not math.isfinite(sample) or sample <= 0:
            raise ValueError(f"benchmark sample {sample!r} is not finite and > 0")
        clean.append(float(sample))
    return clean, extra


def _takes_request(function: Callable[..., object]) -> bool:
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


def safe_case_id(case_id: object) -> str:
    """A case id as a folder name: unsafe runs of characters become ``-``; a name that had
    to change (or is long) gets 8 hex digits of its SHA-1, so two ids never share a folder
    (the TLX agent's naming)."""
    raw = str(case_id)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", raw).strip("._-") or "case"
    if safe == raw and len(safe) <= 96:
        return safe
    digest = hashlib.sha1(raw.encode("utf-8")).hexdigest()[:8]
    return f"{safe[:80].rstrip('._-') or 'case'}-{digest}"


def case_request(request: dict, case_id: object) -> dict:
    """The run's profile request for one case: its own ``artifacts_dir``, created."""
    folder = request.get("artifacts_dir")
    if not folder:
        return dict(request)
    folder = os.path.join(folder, safe_case_id(case_id))
    os.makedirs(folder, exist_ok=True)
    return dict(request, artifacts_dir=folder)


def _profile(harness: ModuleType, artifact: object, case: dict, request: dict) -> object:
    profile = harness.profile
    request = case_request(request, case["case_id"])
    try:
        if _takes_request(profile):
            payload = profile(artifact, case, request)
        else:
            payload = profile(artifact, case)
    except Exception as exc:  # noqa: BLE001 - a profiler failure is data, not a crash
        return {"error": _describe(exc)}
    text = json.dumps(payload, default=repr)
    size = len(text.encode("utf-8"))
    if size > MAX_INLINE_PROFILE_BYTES:
        if not request.get("artifacts_dir"):
            return {"error": "profile payload exceeded inline limit (1MB)", "size_bytes": size}
        spill = os.path.join(request["artifacts_dir"], "raw_profile.json")
        with open(spill, "w", encoding="utf-8") as fh:
            fh.write(text)
        return {"artifact": spill, "size_bytes": size, "truncated": True}
    return json.loads(text)


def evaluate(request: dict) -> dict:
    response: dict[str, Any] = {"build": {"success": False, "diagnostics": []}, "cases": []}
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


def main() -> None:
    request = json.load(sys.stdin)
    response = evaluate(request)
    tmp = request["response"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(response, fh, default=repr)
    os.replace(tmp, request["response"])


if __name__ == "__main__":
    main()
