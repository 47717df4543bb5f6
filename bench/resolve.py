"""Warm-start read latency: `git kb resolve` on a generated 10,000-record bare store.

The store holds `gitkb.testing.synthetic.strategy(n)` records (40 kernels over three arches and
three DSLs) in one import commit, with its index cache built (bench/stores.py), as a
store in use has it. The whole-process time of `git kb resolve` (median of repeated
runs, interleaved with the others so a busy machine slows all alike) is printed next
to `git kb --version` (the target: within 50 ms of it), `git rev-parse HEAD` on the
same repository (the floor any git-backed read pays) and `python -c pass`. gitkb
runs with its bytecode compiled once, into a private cache folder, as an installed
gitkb would, and as a user runs it (`git kb`: the `git-kb` script an install writes).

    python bench/resolve.py [--records 10000] [--runs 15] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402
from stores import GIT_KB, bench_store, store_arguments  # noqa: E402

TARGET_OVER_VERSION_MS = 50


def timed_ms(argv: list[str], env: dict | None = None) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000, done.stdout


def interleaved(commands: dict[str, list[str]], runs: int, env: dict) -> dict[str, list[float]]:
    """Run the commands in turn, ``runs`` rounds, so a busy machine slows all alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(timed_ms(argv, env)[0])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_arguments(parser)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with bench_store(args, ROOT) as (_work, store_dir, built_s, env):
        resolve_argv = [*GIT_KB, "resolve", "--kernel", "op007"]
        resolve_argv += ["--arch", "hopper", "--store", str(store_dir)]
        answer = json.loads(timed_ms(resolve_argv, env)[1])
        times = interleaved(
            {
                "resolve": resolve_argv,
                "version": [*GIT_KB, "--version"],
                "rev-parse": ["git", "-C", str(store_dir), "rev-parse", "HEAD"],
                "python": [sys.executable, "-c", "pass"],
            },
            args.runs,
            env,
        )
    ours, version, floor, python = (
        statistics.median(times[k]) for k in ("resolve", "version", "rev-parse", "python")
    )
    over = statistics.median(r - v for r, v in zip(times["resolve"], times["version"], strict=True))
    print(f"store                      {args.records} records, bare (built in {built_s:.1f} s)")
    print(
        f"resolve answer             {answer['read_reason']}, {len(answer['ranks'])} ranks of "
        f"{answer['counts']['same_arch']} same-arch candidates"
    )
    print(f"git kb resolve             {ours:8.1f} ms  (median of {args.runs})")
    print(f"git kb --version           {version:8.1f} ms")
    print(f"git rev-parse HEAD         {floor:8.1f} ms  (floor)")
    print(f"python -c pass             {python:8.1f} ms  (interpreter start-up)")
    print(f"resolve over --version     {over:8.1f} ms  (median of per-round differences)"
          f"   target <= {TARGET_OVER_VERSION_MS}")  # fmt: skip
    print(f"ratio resolve / rev-parse  {ours / floor:8.1f}x")
    figure(f"resolve over --version, {args.records}-record store", over, "ms",
           TARGET_OVER_VERSION_MS, "lower")  # fmt: skip


if __name__ == "__main__":
    main()
