"""The optimizer's own overhead per candidate, against a bare spawn of the same harness.

A trivial harness (no sleep, returns at once) goes through N candidates with the
replay provider. The overhead per candidate is the run's wall time per
evaluation minus the time of a bare subprocess spawn of the same harness child
(measured in the same run), so what remains is gitkb's own work: the contained
runner (its supervisor process), the frozen bundle's hash checks, bookkeeping,
files, trace commits, scoring.

``--profile`` gives the harness a ``profile(artifact, case, request)`` that writes a
file into the per-case artifacts folder of TLX's profile request, so the run carries
every artifact it writes for a profiling harness.

    python bench/optimize.py [--candidates 20] [--profile]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402

from gitkb.optimize import loop  # noqa: E402
from gitkb.optimize.providers import ProviderOptions  # noqa: E402
from gitkb.optimize.worker import CHILD  # noqa: E402

TARGET_OVERHEAD_S = 0.3

HARNESS = """
def build(source, target):
    ns = {}
    exec(source, ns)
    return ns
def verify(k, case):
    return k["kernel"](3) == 3
def benchmark(k, case, repetitions):
    return [k["COST"]] * repetitions
"""
PROFILE = """
def profile(k, case, request):
    import os
    with open(os.path.join(request["artifacts_dir"], "trace.txt"), "w") as fh:
        fh.write("one line")
    return {"duration_us": k["COST"]}
"""


def write_bundle(work: Path, candidates: int, profile: bool) -> tuple[Path, Path]:
    bundle = work / "bundle"
    bundle.mkdir()
    (bundle / "harness.py").write_text(HARNESS + (PROFILE if profile else ""))
    (bundle / "kernel.py").write_text("COST = 1000.0\n\n\ndef kernel(x):\n    return x\n")
    (bundle / "cases.json").write_text(
        json.dumps([{"case_id": "a", "parameters": {}}, {"case_id": "b", "parameters": {}}])
    )
    (bundle / "target.json").write_text(json.dumps({"backend": "cpu", "device": "cpu"}))
    (bundle / "budget.json").write_text(
        json.dumps(
            {"max_rounds": 1, "candidates_per_round": candidates, "benchmark_repetitions": 5}
        )
    )
    replay = work / "candidates"
    replay.mkdir()
    for i in range(candidates):
        # alternate faster and slower: promotions and rejections both get exercised
        cost = 900.0 - i if i % 2 == 0 else 5000.0 + i
        (replay / f"{i:03d}.py").write_text(f"COST = {cost}\n\n\ndef kernel(x):\n    return x\n")
    return bundle, replay


def bare_spawn(bundle: Path, work: Path, repeats: int = 10) -> float:
    """Seconds of one subprocess evaluation of the harness, without the optimizer."""
    response = work / "bare-response.json"
    request = json.dumps(
        {
            "harness": str(bundle / "harness.py"),
            "source": "COST = 1.0\n",
            "target": {},
            "cases": [{"case_id": "a"}, {"case_id": "b"}],
            "repetitions": 5,
            "profile": None,
            "response": str(response),
        }
    )
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(CHILD)], input=request.encode(), check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="a harness with profile()")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bundle, replay = write_bundle(work, args.candidates, args.profile)
        spawn = bare_spawn(bundle, work)
        start = time.perf_counter()
        result = loop.run(
            loop.RunConfig(
                bundle=bundle,
                output=work / "out",
                provider="replay",
                provider_options=ProviderOptions(replay_dir=str(replay)),
                commit_winner=False,
                progress=lambda line: None,
            )
        )
        elapsed = time.perf_counter() - start
        evaluations = len([p for p in (work / "out" / "experiments").iterdir()])
    per_eval = elapsed / evaluations
    overhead = per_eval - spawn
    print(
        f"candidates: {args.candidates}{' (profiling harness)' if args.profile else ''}, "
        f"harness evaluations: {evaluations} "
        f"(baseline, bundle check and final revalidation included), "
        f"winner: {result.document['winner']}"
    )
    print(f"bare harness spawn:        {spawn * 1000:7.1f} ms per evaluation")
    print(f"optimizer, per evaluation: {per_eval * 1000:7.1f} ms")
    print(f"optimizer overhead:        {overhead * 1000:7.1f} ms per candidate")
    figure("optimizer overhead per candidate", overhead, "s", TARGET_OVERHEAD_S, "lower")


if __name__ == "__main__":
    main()
