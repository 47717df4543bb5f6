"""Mining throughput: a generated 1,000-version legacy trace and a 200-version long-horizon one.

Times ingest, partition + packets, and the whole `git kb mine --dry-run` (a subprocess,
start-up included), prints versions/s, and times `git log -p` over the same trace in the
same run as the floor. Target: the whole dry run on 1,000 versions within 10 s.

    python bench/mine.py [--versions 1000] [--episodes 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from figures import figure  # noqa: E402
from trace_factory import Trace  # noqa: E402

from gitkb.trace.ingest import ingest  # noqa: E402
from gitkb.trace.ladder import build_ladder  # noqa: E402
from gitkb.trace.options import TraceOptions  # noqa: E402
from gitkb.trace.packets import packets_from  # noqa: E402
from gitkb.trace.partition import partition  # noqa: E402
from gitkb.vcs.repository import Repository  # noqa: E402

TARGET_DRY_RUN_S = 10.0


def legacy(path: Path, versions: int) -> Path:
    t = Trace(path)
    t.setup()
    geomean = 1000.0
    for n in range(versions):
        if n % 5 == 3:
            t.legacy_revert(
                n,
                geomean * 1.1,
                "slower",
                [f"tile {n} spills registers on sm_90 because each thread holds {n % 64} values"],
            )
            continue
        geomean = round(geomean * (0.97 if n % 2 else 0.995), 3)
        t.legacy_keep(n, geomean, f"step {n}: retuned the row loop and the block size")
    return t.write()


def long_horizon(path: Path, episodes: int) -> Path:
    t = Trace(path)
    t.setup(hardware="NVIDIA B200")
    t.v0_two_commit(2000.0)
    t.v1_two_commit(1000.0)
    geomean, incumbent = 1000.0, "v1"
    for e in range(1, episodes - 1):
        n = e + 1
        if e % 3 == 0:
            geomean = round(geomean * 0.98, 3)
            t.promote(e, n, geomean, 2.0, f"episode {e}: split the reduction across warps")
            incumbent = f"v{n}"
        else:
            t.non_promotion(n, e, "pivot", incumbent, geomean)
    return t.write()


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def bench(path: Path, label: str) -> dict:
    repo = Repository.open(path)
    tip = repo.resolve("HEAD")
    options = TraceOptions()
    t_ingest, ingested = timed(lambda: ingest(repo, tip, label, options))

    def cut():
        ladder = build_ladder(ingested.rows)
        segments = partition(ingested, ladder)
        return packets_from(repo, ingested, ladder, segments, options)

    t_packets, packets = timed(cut)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t_dry, done = timed(
        lambda: subprocess.run(
            [sys.executable, "-m", "gitkb", "mine", str(path), "--dry-run", "--json"],
            env=env,
            capture_output=True,
        )
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr.decode())
    t_log, _ = timed(
        lambda: subprocess.run(["git", "log", "-p"], cwd=path, capture_output=True, check=True)
    )
    versions = len(ingested.rows)
    return {
        "trace": label,
        "versions": versions,
        "packets": len(packets),
        "ingest_s": t_ingest,
        "partition_packets_s": t_packets,
        "dry_run_s": t_dry,
        "git_log_p_s": t_log,
        "versions_per_s": versions / t_dry,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--episodes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        rows = [
            bench(legacy(work / "kernel_opt_100_softmax", args.versions), "legacy"),
            bench(long_horizon(work / "kernel_opt_101_softmax", args.episodes), "long-horizon"),
        ]
    print(
        f"{'trace':14} {'versions':>8} {'packets':>7} {'ingest':>8} {'cut+pack':>8} "
        f"{'dry run':>8} {'git log -p':>10} {'versions/s':>10}"
    )
    for r in rows:
        print(
            f"{r['trace']:14} {r['versions']:8d} {r['packets']:7d} {r['ingest_s']:7.2f}s "
            f"{r['partition_packets_s']:7.2f}s {r['dry_run_s']:7.2f}s {r['git_log_p_s']:9.2f}s "
            f"{r['versions_per_s']:10.0f}"
        )
    figure(f"mine --dry-run, {args.versions} versions", rows[0]["dry_run_s"], "s",
           TARGET_DRY_RUN_S, "lower")  # fmt: skip


if __name__ == "__main__":
    main()
