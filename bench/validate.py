"""`git kb validate` speed: the conformance sample, a generated 10,000-record store, and
the public GPU-wiki store against its own reference checker.

Prints, per input: the gates' in-process time (and each gate's share), the
whole-process wall time of `git kb validate`, and records/s. Baselines measured in
the same run: parsing every record file as JSON (the floor under any gate) and
`python -c pass` (the floor under any process). Targets on the 282-record sample:
<= 0.15 s of gate time, whole process < 0.5 s. With ``--reference`` (a checkout or
clone of alibaba/atrex-kernel-agent, env GITKB_ATREX_REFERENCE), its 847-record
gpu-wiki/kernel_wiki is validated by `git kb validate` and by the reference checker
(`python3 tools/check_kernel_wiki.py --out kernel_wiki`), best of ``--runs`` each, side
by side; target: <= 0.25x the reference's time.

    python bench/validate.py [--records 10000] [--reference PATH] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402

from gitkb.gates.registry import all_gates  # noqa: E402
from gitkb.store.validation import context_for  # noqa: E402

SAMPLE = ROOT.parent / "shared" / "conformance" / "gpu-wiki-sample"
TARGET_GATES_S = 0.15
TARGET_PROCESS_S = 0.5
TARGET_VS_REFERENCE = 0.25
RUNS = 3


def build_store(path: Path, size: int) -> None:
    from stores import build_store as build

    build(path, size)


def gate_times(path: Path, runs: int) -> tuple[int, float, dict[str, float], float]:
    """Records, best total gate time, each gate's time in that run, and JSON-parse time."""
    ctx = context_for(path)
    gates = all_gates()
    best: tuple[float, dict[str, float]] | None = None
    for _ in range(runs):
        per_gate = {}
        for gate in gates:
            start = time.perf_counter()
            gate.run(ctx)
            per_gate[gate.name] = time.perf_counter() - start
        total = sum(per_gate.values())
        if best is None or total < best[0]:
            best = (total, per_gate)
    start = time.perf_counter()
    for record_file in ctx.records:
        json.loads(record_file.raw)
    parse = time.perf_counter() - start
    return len(ctx.records), best[0], best[1], parse


def process_time(*args: str, runs: int = RUNS) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(label: str, path: Path, python_s: float, targets: bool, runs: int = RUNS) -> bool:
    records, gates_s, per_gate, parse_s = gate_times(path, runs)
    wall = process_time("-m", "gitkb", "validate", str(path), runs=runs)
    slowest = sorted(per_gate.items(), key=lambda kv: -kv[1])[:4]
    print(f"{label}: {records} records")
    print(
        f"  gates in-process   {gates_s:7.3f} s  {records / gates_s:9.0f} records/s"
        + (f"   target <= {TARGET_GATES_S}" if targets else "")
    )
    print("  slowest gates      " + ", ".join(f"{n} {t:.3f} s" for n, t in slowest))
    print(f"  JSON parse only    {parse_s:7.3f} s  (gates / parse: {gates_s / parse_s:.1f}x)")
    print(
        f"  git kb validate    {wall:7.3f} s  {records / wall:9.0f} records/s"
        f"   (python -c pass: {python_s:.3f} s)"
        + (f"   target < {TARGET_PROCESS_S}" if targets else "")
    )
    if targets:
        figure(f"validate gate time, {label}", gates_s, "s", TARGET_GATES_S, "lower")
        figure(f"git kb validate, {label}", wall, "s", TARGET_PROCESS_S, "lower")


def gpu_wiki(reference: Path, work: Path) -> Path | None:
    """gpu-wiki/ of the reference: in a checkout, or exported from a (bare) clone."""
    if (reference / "gpu-wiki" / "tools").is_dir():
        return reference / "gpu-wiki"
    git_dir = reference if (reference / "objects").is_dir() else reference / ".git"
    if not git_dir.exists():
        return None
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "HEAD", "gpu-wiki"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    return work / "gpu-wiki"


def versus_reference(wiki: Path, runs: int) -> None:
    """`git kb validate` of the public store's kernel_wiki against the reference checker."""
    folder = wiki / "kernel_wiki"
    ours = best(runs, [sys.executable, "-m", "gitkb", "validate", str(folder)], wiki)
    theirs = best(runs, ["python3", "tools/check_kernel_wiki.py", "--out", "kernel_wiki"], wiki)
    records = sum(1 for p in (folder / "records").rglob("*.json") if p.name != "index.json")
    ratio = ours / theirs
    print(f"GPU-wiki store ({records} records): git kb validate {ours:.3f} s, reference "
          f"checker {theirs:.3f} s: {ratio:.2f}x (target <= {TARGET_VS_REFERENCE}x)")  # fmt: skip
    figure("git kb validate / reference checker, GPU-wiki store", ratio, "x",
           TARGET_VS_REFERENCE, "lower")  # fmt: skip


def best(runs: int, command: list[str], cwd: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=cwd, capture_output=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{command[:3]}: {done.stderr.decode()[-1000:]}")
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reference", type=Path, default=os.environ.get("GITKB_ATREX_REFERENCE"))
    args = parser.parse_args()
    if args.reference:
        with tempfile.TemporaryDirectory() as tmp:
            wiki = gpu_wiki(args.reference, Path(tmp))
            if wiki is None:
                raise SystemExit(f"--reference {args.reference}: no gpu-wiki/ there")
            versus_reference(wiki, args.runs)
    python_s = process_time("-c", "pass")
    if SAMPLE.is_dir():
        report("conformance sample", SAMPLE, python_s, targets=True)
    else:
        print(f"conformance sample: not present at {SAMPLE}, skipped")
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store.git"
        build_store(store, args.records)
        report(f"generated store ({args.records})", store, python_s, targets=False, runs=1)


if __name__ == "__main__":
    main()
