"""Retrieval latency: `git kb query` (and `git kb show` of a hit) on a generated
10,000-record bare store, side by side with `git kb --version`.

The store is built as bench/stores.py builds it (synthetic strategies over three
arches, three DSLs and 40 operator families, one import commit) and its index cache
once, as a store in use has it. gitkb runs with its bytecode compiled once (into a
private cache folder), as an installed gitkb would, and runs as a user runs it: `git kb`,
git finding the `git-kb` script an install writes on PATH. Each query below runs as a whole
process, interleaved round by round with `git kb --version` (the interpreter and
the CLI: the floor any verb pays) so a busy machine slows all alike; the figure
is the median of the per-round differences.

The headline is the question an agent asks while it optimizes one kernel (its arch
as the runtime reports it, its DSL and operator family, a few words, --brief, a
budget). The broader questions show what a wide scope costs: the index cache counts
and ranks the pool in SQL and returns only the hits served. A question that matches
nothing over a third of the store pays its diagnosis and fallback sample; a symptom
filter every record holds, and a speedup floor that no entry states (each record's
measured speedup decides), are the filters that read more than an indexed column.
`python -c pass` is timed alongside, the floor under `git kb --version`.

    python bench/query.py [--records 10000] [--runs 15] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402
from resolve import interleaved, timed_ms  # noqa: E402
from stores import GIT_KB, bench_store, bytecode_note, store_arguments  # noqa: E402

TARGET_MS = 50  # over `git kb --version`
VERSION_TARGET_MS = 25  # start-up: the interpreter and gitkb.cli, nothing else
HEADLINE = "agent: arch+dsl+family"
QUERIES = {
    HEADLINE: ["--arch", "sm_90", "--dsl", "triton", "--family", "op007", "online", "softmax",
               "--brief", "--limit", "5", "--max-bytes", "20000"],
    "arch+dsl": ["--arch", "H100", "--dsl", "triton", "online", "softmax"],
    "arch only": ["--arch", "9.0", "pass-fusion"],
    "whole store": ["softmax"],
    "zero matches": ["--arch", "sm_90", "--dsl", "triton", "--family", "op007", "xyzzy"],
    "zero, arch only": ["--arch", "sm_90", "xyzzy"],
    "symptom": ["--symptom", "memory-bound", "online", "softmax"],
    "speedup floor": ["--min-speedup", "1.3", "softmax"],
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_arguments(parser)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with bench_store(args, ROOT) as (_work, store_dir, built_s, env):
        commands = {"--version": [*GIT_KB, "--version"], "python": [sys.executable, "-c", "pass"]}
        answers = {}
        for name, flags in QUERIES.items():
            argv = [*GIT_KB, "query", "--store", str(store_dir), "--json", *flags]
            commands[name] = argv
            answers[name] = json.loads(timed_ms(argv, env)[1])  # also compiles the bytecode
        shown = answers[HEADLINE]["records"][0]["id"]  # the record an agent reads whole next
        commands["show"] = [*GIT_KB, "show", "--store", str(store_dir), shown]
        timed_ms(commands["show"], env)
        times = interleaved(commands, args.runs, env)
    floor = statistics.median(times["--version"])
    print(f"store                      {args.records} records, bare (built in {built_s:.1f} s)")
    print(bytecode_note(env))
    interpreter = statistics.median(times["python"])
    print(f"git kb --version           {floor:8.1f} ms  (median of {args.runs}; the interpreter "
          f"alone, python -c pass: {interpreter:.1f} ms)")  # fmt: skip
    over = {}
    for name in QUERIES:
        result = answers[name]["result"]
        diffs = [q - v for q, v in zip(times[name], times["--version"], strict=True)]
        over[name] = statistics.median(diffs)
        print(f"query, {name:20}{statistics.median(times[name]):8.1f} ms  "
              f"(+{over[name]:.1f} ms over --version; {result['kind']}, {result['served']} "
              f"served of a {result['scoped_pool']}-record pool)")  # fmt: skip
    over["show"] = statistics.median(
        [s - v for s, v in zip(times["show"], times["--version"], strict=True)]
    )
    print(f"{'show, the first hit':27}{statistics.median(times['show']):8.1f} ms  "
          f"(+{over['show']:.1f} ms over --version)")  # fmt: skip
    for name in QUERIES:  # every scope within start-up + TARGET_MS, the headline first
        figure(f"query over --version, {name}, {args.records} records", over[name], "ms",
               TARGET_MS, "lower")  # fmt: skip
    figure(f"show over --version, {args.records} records", over["show"], "ms", TARGET_MS,
           "lower")  # fmt: skip
    figure("git kb --version", floor, "ms", VERSION_TARGET_MS, "lower")


if __name__ == "__main__":
    main()
