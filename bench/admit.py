"""Admission throughput: one `git kb admit` call of N records onto stores of several sizes.

For each store size (generated records in one import commit, index cache built, as a
store in use has it) the whole `git kb admit` process is timed admitting N new records,
one commit each, gates included, start-up included (its bytecode compiled by an untimed
admission first, as an installed gitkb's is). Beside it, the same admissions
through C git's plumbing (hash-object, update-index, write-tree, commit-tree,
update-ref per record) on a copy of the same store: the per-commit floor any git
store pays. Targets (store format 2): >= 500 records/s onto 10,000 records, within
1.3x of the rate onto 1,000 records, and (--large) 100,000 records within 1.5x of
10,000. Also the start-up of `git kb --help`.

    python bench/admit.py [--sizes 1000 10000] [--large] [--records 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402
from stores import build_store, bytecode_note, fresh_records, installed_env  # noqa: E402

from gitkb import record as rec  # noqa: E402

TARGET_RECORDS_PER_S = 500
TARGET_RATIO_10K = 1.3
TARGET_RATIO_100K = 1.5
TARGET_HELP_MS = 150


def bench_gitkb(
    store_dir: Path, payloads: list[bytes], work: Path, env: dict, repeat: int = 1
) -> float:
    """The best of ``repeat`` timed admits, each into a fresh copy of the store (the
    machine's other load only ever slows a run down)."""
    files = []
    for n, raw in enumerate(payloads):
        path = work / f"in-{n:05d}.json"
        path.write_bytes(raw)
        files.append(str(path))
    times = []
    for attempt in range(repeat):
        target = work / f"admit-{attempt}.git"
        shutil.copytree(store_dir, target, symlinks=True)
        # The copy reaches the disk first: the admission's own flush of the cache file
        # (SQLite's checkpoint) must not wait for the copy's 90 MB.
        os.sync()
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "gitkb", "admit", *files, "--store", str(target)],
            env=env,
            capture_output=True,
        )
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"git kb admit failed:\n{done.stderr.decode()[-2000:]}")
        shutil.rmtree(target)
    return min(times)


def bench_c_git(store_dir: Path, payloads: list[bytes], work: Path) -> float:
    """The same admissions with C git plumbing on a copy of the store."""
    repo = work / "plumbing.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(store_dir), str(repo)], check=True)
    env = dict(os.environ, GIT_DIR=str(repo), GIT_INDEX_FILE=str(work / "plumbing.index"))

    def git(*args: str, data: bytes | None = None) -> str:
        out = subprocess.run(["git", *args], env=env, input=data, capture_output=True, check=True)
        return out.stdout.decode().strip()

    parent = git("rev-parse", "refs/heads/main")
    git("read-tree", parent)
    start = time.perf_counter()
    for raw in payloads:
        record = rec.parse(raw, "bench")
        path = rec.path_for(record)
        blob = git("hash-object", "-w", "--stdin", data=raw)
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
        tree = git("write-tree")
        message = f"kb insert {record['id']}\n\nKB-Action: insert\nKB-Record: {record['id']}\n"
        commit = git("commit-tree", tree, "-p", parent, data=message.encode())
        git("update-ref", "refs/heads/main", commit, parent)
        parent = commit
    return time.perf_counter() - start


def startup_ms(argv: list[str], env: dict, runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--large", action="store_true", help="Add a 100,000-record store.")
    parser.add_argument("--records", type=int, default=1000, help="Admissions per call.")
    parser.add_argument("--repeat", type=int, default=3, help="Timed admits per store (best).")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes) | ({100_000} if args.large else set()))
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = installed_env(work, ROOT)
        # One untimed admission first: it compiles the bytecode every timed call reads.
        warm = build_store(work / "warm" / "kb.git", 10)
        bench_gitkb(warm.location, fresh_records(10, 1), work / "warm", env)
        for size in sizes:
            folder = work / str(size)
            folder.mkdir()
            started = time.perf_counter()
            store = build_store(folder / "kb.git", size)
            built = time.perf_counter() - started
            payloads = fresh_records(size, args.records)
            ours = bench_gitkb(store.location, payloads, folder, env, args.repeat)
            theirs = bench_c_git(store.location, payloads, folder)
            rows[size] = (args.records / ours, args.records / theirs, built)
        help_ms = startup_ms([sys.executable, "-m", "gitkb", "--help"], env)
        python_ms = startup_ms([sys.executable, "-c", "pass"], env)
    print(f"{args.records} admissions in one `git kb admit` call (whole process, best of "
          f"{args.repeat}, each into a fresh copy of the store)")  # fmt: skip
    print(bytecode_note(env))
    print(f"{'store':>8} {'gitkb':>12} {'C git plumbing':>16} {'ratio':>7}   (store built in)")
    for size, (ours, theirs, built) in rows.items():
        print(
            f"{size:>8} {ours:>8.1f} r/s {theirs:>12.1f} r/s {ours / theirs:>6.2f}x   "
            f"({built:.1f} s)"
        )
    pairs = ((1000, 10000, TARGET_RATIO_10K), (10000, 100_000, TARGET_RATIO_100K))
    for small, large, target in pairs:
        if small in rows and large in rows:
            slowdown = rows[small][0] / rows[large][0]
            print(f"rate {small} / rate {large}: {slowdown:.2f}x   (target <= {target})")
            figure(f"admission slowdown {large}/{small}", slowdown, "x", target, "lower")
    print(f"git kb --help start-up     {help_ms:8.1f} ms   (python -c pass: {python_ms:.1f} ms)")
    for size, (ours, _, _) in rows.items():
        if size >= 10000:
            figure(f"admission rate onto {size} records", ours, "records/s",
                   TARGET_RECORDS_PER_S, "higher")  # fmt: skip
    figure("git kb --help start-up", help_ms, "ms", TARGET_HELP_MS, "lower")


if __name__ == "__main__":
    main()
