"""Admission throughput: N generated records into a fresh store, one commit each.

Prints records/s for gitkb (library admissions, gates included) next to a C git
plumbing baseline doing the same writes (hash-object, update-index, write-tree,
commit-tree, update-ref per record, index.json rewritten each time), and the
start-up time of `git kb --help`.

    python bench/admit.py [--records 2000]
"""

from __future__ import annotations

import argparse
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

from gitkb import record as rec  # noqa: E402
from gitkb import synthetic  # noqa: E402
from gitkb.store import AdmitRequest, Store  # noqa: E402

TARGET_RECORDS_PER_S = 200
TARGET_HELP_MS = 150


def bench_gitkb(work: Path, payloads: list[bytes]) -> float:
    store = Store.init(work / "kb.git", bare=True)
    start = time.perf_counter()
    store.admit_many([AdmitRequest(raw) for raw in payloads])
    elapsed = time.perf_counter() - start
    assert len(store.view()) == len(payloads)
    return elapsed


def bench_c_git(work: Path, records: list[dict], payloads: list[bytes]) -> float:
    repo = work / "plumbing.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    env = dict(os.environ, GIT_DIR=str(repo), GIT_INDEX_FILE=str(work / "plumbing.index"))

    def git(*args: str, data: bytes | None = None) -> str:
        out = subprocess.run(["git", *args], env=env, input=data, capture_output=True, check=True)
        return out.stdout.decode().strip()

    index = rec.Index()
    parent = None
    start = time.perf_counter()
    for record, raw in zip(records, payloads, strict=True):
        path = rec.path_for(record)
        index.put(rec.index_entry(record, path))
        blob = git("hash-object", "-w", "--stdin", data=raw)
        index_blob = git("hash-object", "-w", "--stdin", data=index.dumps())
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}",
            "--cacheinfo", f"100644,{index_blob},{rec.INDEX_PATH}")  # fmt: skip
        tree = git("write-tree")
        message = f"kb insert {record['id']}\n\nKB-Action: insert\nKB-Record: {record['id']}\n"
        commit = git(
            "commit-tree", tree, *(["-p", parent] if parent else []), data=message.encode()
        )
        git("update-ref", "refs/heads/main", commit, *([parent] if parent else []))
        parent = commit
    return time.perf_counter() - start


def help_startup_ms(runs: int = 15) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gitkb", "--help"], env=env, capture_output=True, check=True
        )
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def python_startup_ms(runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    args = parser.parse_args()
    records = [synthetic.strategy(n) for n in range(args.records)]
    payloads = [rec.dumps(r) for r in records]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ours = bench_gitkb(work, payloads)
        theirs = bench_c_git(work, records, payloads)
    help_ms, bare_python_ms = help_startup_ms(), python_startup_ms()
    ours_rate, theirs_rate = args.records / ours, args.records / theirs
    print(f"records admitted           {args.records}")
    print(
        f"gitkb admissions           {ours_rate:8.1f} records/s  ({ours:.2f} s)"
        f"   target >= {TARGET_RECORDS_PER_S}"
    )
    print(f"C git plumbing baseline    {theirs_rate:8.1f} records/s  ({theirs:.2f} s)")
    print(f"ratio gitkb / C git        {ours_rate / theirs_rate:8.2f}x")
    print(
        f"git kb --help start-up     {help_ms:8.1f} ms   (python -c pass: {bare_python_ms:.1f} ms)"
        f"   target < {TARGET_HELP_MS}"
    )
    figure("admission rate", ours_rate, "records/s", TARGET_RECORDS_PER_S, "higher")
    figure("git kb --help start-up", help_ms, "ms", TARGET_HELP_MS, "lower")


if __name__ == "__main__":
    main()
