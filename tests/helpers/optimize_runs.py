"""Optimizer runs on a fake bundle: a harness whose timings are set by the candidate's own
constants (``COST``, ``BROKEN``, ``JITTER``, ``FLAKY``), so every verdict is deterministic,
and candidates replayed from a folder."""

from __future__ import annotations

import json
from pathlib import Path

from gitkb.optimize import loop
from gitkb.optimize.providers import ProviderOptions
from gitkb.store import Store
from gitkb.warmstart.attest import read_ledger

HARNESS = """
import os

_CALLS = {"verify": 0}


def build(source, target):
    ns = {}
    exec(source, ns)
    hook = os.environ.get("FAKE_BUILD_HOOK")
    if hook and ns.get("RUN_HOOK"):
        exec(open(hook).read())
    return ns


def verify(k, case):
    _CALLS["verify"] += 1
    if k["kernel"](3) != 3:
        return {"passed": False, "diagnostics": ["kernel(3) is not 3"]}
    if case["case_id"] in k.get("BROKEN", []):
        return {"passed": False, "diagnostics": ["wrong values"]}
    flaky = os.environ.get("FAKE_FLAKY_MARK")
    if k.get("FLAKY") and flaky and _CALLS["verify"] == 1:
        if os.path.exists(flaky):
            return {"passed": False, "diagnostics": ["flaky result"]}
        open(flaky, "w").close()
    return True


def benchmark(k, case, repetitions):
    cost = k["COST"] * case["parameters"].get("scale", 1.0)
    jitter = k.get("JITTER", 0.0)
    return [cost * (1 + jitter * (i % 2)) for i in range(repetitions)]
"""


KERNEL = '''"""A fake kernel: the harness reads its constants."""

COST = 100.0
BROKEN = []
JITTER = 0.0
FLAKY = False
RUN_HOOK = False


def kernel(x):
    return x
'''


def make_bundle(
    tmp_path: Path, budget: dict | None = None, env: dict | None = None, cases=None, tunables=None
) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "harness.py").write_text(HARNESS)
    (bundle / "kernel.py").write_text(KERNEL)
    cases = cases or [
        {"case_id": "small", "parameters": {"scale": 1.0}, "weight": 1.0},
        {"case_id": "large", "parameters": {"scale": 4.0}, "weight": 2.0, "protected": False},
    ]
    (bundle / "cases.json").write_text(json.dumps(cases))
    target = {
        "backend": "cpu",
        "architecture": "x86_64",
        "device": "cpu",
        "environment": env or {},
        "optimization_guidance": "make COST small",
    }
    if tunables:
        target["tunables"] = tunables
    (bundle / "target.json").write_text(json.dumps(target))
    budget = {
        "max_rounds": 1,
        "candidates_per_round": 8,
        "max_candidate_seconds": 20,
        "benchmark_repetitions": 3,
        **(budget or {}),
    }
    (bundle / "budget.json").write_text(json.dumps(budget))
    return bundle


def variant(**changes) -> str:
    source = KERNEL
    for name, value in changes.items():
        lines = source.splitlines()
        lines = [f"{name} = {value!r}" if line.startswith(f"{name} = ") else line for line in lines]
        source = "\n".join(lines) + "\n"
    return source


def replay_dir(tmp_path: Path, *sources: str) -> Path:
    folder = tmp_path / "candidates"
    folder.mkdir()
    for index, source in enumerate(sources):
        (folder / f"{index:02d}.py").write_text(source)
    return folder


def run(tmp_path, bundle, provider="replay", replay=None, **kwargs):
    lines = []
    config = loop.RunConfig(
        bundle=bundle,
        output=tmp_path / "out",
        provider=provider,
        provider_options=ProviderOptions(
            replay_dir=str(replay) if replay else None, **kwargs.pop("options", {})
        ),
        commit_winner=kwargs.pop("commit_winner", False),
        progress=lines.append,
        **kwargs,
    )
    result = loop.run(config)
    return result, lines


def statuses(result):
    return [(e["experiment_id"], e["status"]) for e in result.document["experiments"]]


CASES_SMALL = [{"case_id": "small", "parameters": {"scale": 1.0}, "weight": 1.0}]


def attest_outcomes(store: Store, record_id: str) -> list[str]:
    return [e["outcome"] for e in read_ledger(store, record_id).events if e["event"] == "attest"]
