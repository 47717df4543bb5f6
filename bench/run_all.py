"""Run every bench script and print one table of headline figures against their targets.

    python bench/run_all.py [--quick]

Each script prints its own detail, and `figure:` lines (bench/figures.py) that this
runner collects. `--quick` runs each with smaller inputs (figures then read against
the same targets, so a miss at full size may pass quick).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from figures import PREFIX

HERE = Path(__file__).resolve().parent
# script -> arguments for --quick
SCRIPTS = {
    "admit.py": ["--records", "500"],
    "validate.py": ["--records", "2000"],
    "pre_receive.py": ["--sizes", "300", "3000"],
    "check.py": ["--records", "2000"],
    "mine.py": ["--versions", "300", "--episodes", "60"],
    "resolve.py": ["--records", "2000"],
    "optimize.py": ["--candidates", "10"],
    "query.py": ["--records", "2000", "--runs", "7"],
    "mcp_query.py": ["--records", "2000", "--calls", "50"],
    "geak.py": ["--entries", "400", "--changes", "20"],
    "flywheel.py": ["--repeats", "1"],
    "techniques.py": ["--runs", "2"],
}
# script -> arguments for every run, quick or not
ALWAYS = {"pre_receive.py": ["--signed"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs for a fast look")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per script")
    args = parser.parse_args()
    rows, failures = [], []
    for script, quick_args in SCRIPTS.items():
        argv = [sys.executable, str(HERE / script), *ALWAYS.get(script, [])]
        argv += quick_args if args.quick else []
        print(f"== {script} {' '.join(argv[2:])}", flush=True)
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            failures.append(f"{script}: over {args.timeout:.0f} s")
            continue
        for line in done.stdout.splitlines():
            if line.startswith(PREFIX):
                rows.append(json.loads(line[len(PREFIX) :]))
            else:
                print(f"   {line}")
        if done.returncode != 0:
            failures.append(f"{script}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
        print(f"   ({time.perf_counter() - start:.0f} s)", flush=True)
    print()
    print(f"{'figure':48} {'measured':>14} {'target':>14}  verdict")
    for f in rows:
        sign = "<=" if f["better"] == "lower" else ">="
        measured = f"{f['value']:.4g} {f['unit']}"
        target = f"{sign} {f['target']:g} {f['unit']}"
        print(f"{f['name'][:48]:48} {measured:>14} {target:>14}  {'met' if f['met'] else 'MISSED'}")
    for failure in failures:
        print(f"failed: {failure}")
    missed = sum(not f["met"] for f in rows)
    print(f"{len(rows) - missed} of {len(rows)} targets met")


if __name__ == "__main__":
    main()
