"""Mining throughput, against the reference pipeline and git in the same run.

Generates a 1,000-version legacy trace, a 10,000-version one (linearity) and a
200-episode long-horizon one, then times, each best of ``--runs`` (the 10,000-version
trace: of two at most):

* ``git kb mine --dry-run`` (a subprocess, start-up included, gitkb's bytecode kept as
  an installed gitkb keeps it), and its stages in process;
* the reference pipeline's deterministic stages on the same 1,000-version trace
  (``ingest.py``, ``recon.py``, ``partition.py``, ``build_packets.py`` of the public
  opt-trace-mining scripts) when ``--reference`` names a checkout or a clone of
  alibaba/atrex-kernel-agent (scratch and staging folders are temporary; nothing is
  fetched); the dry run of that trace is then timed once before each of their runs, so
  the two compared meet the same load;
* ``git log -p --all`` of the same trace, the floor any reader of the history pays.

Targets (issue 22): the dry run >= 8x faster than the reference stages (without the
reference: <= 15x ``git log -p --all``), and 10,000 versions within 11x of 1,000.

    python bench/mine.py [--versions 1000] [--reference PATH] [--runs 3]
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

from figures import figure  # noqa: E402
from stores import installed_env  # noqa: E402

from gitkb.testing.trace_builder import Trace  # noqa: E402
from gitkb.trace.ingest import ingest  # noqa: E402
from gitkb.trace.ladder import build_ladder  # noqa: E402
from gitkb.trace.options import TraceOptions  # noqa: E402
from gitkb.trace.packets import packets_from  # noqa: E402
from gitkb.trace.partition import partition  # noqa: E402
from gitkb.vcs.repository import Repository  # noqa: E402

TARGET_VS_REFERENCE = 8.0
TARGET_VS_GIT_LOG = 15.0
TARGET_LINEARITY = 11.0
REFERENCE_STAGES = ("ingest", "recon", "partition", "build_packets")
SCRIPTS = "gpu-wiki/skills/opt-trace-mining/scripts"


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


def best_of(runs: int, fn) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(args: list[str], **kwargs) -> None:
    done = subprocess.run(args, capture_output=True, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])}: {done.stderr.decode()[-2000:]}")


def dry_run(path: Path, env: dict) -> None:
    command = [sys.executable, "-m", "gitkb", "mine", str(path), "--dry-run", "--json"]
    run(command, env=env, cwd=path.parent)  # from the folder that holds the trace


def stages(path: Path, runs: int) -> dict[str, float]:
    """In-process times of ingest and of ladder + partition + packets."""
    repo = Repository.open(path)
    tip = repo.resolve("HEAD")
    options = TraceOptions()
    ingested = ingest(repo, tip, path.name, options)

    def cut() -> None:
        ladder = build_ladder(ingested.rows)
        segments = partition(ingested, ladder)
        packets_from(repo, ingested, ladder, segments, options)

    return {
        "ingest": best_of(runs, lambda: ingest(repo, tip, path.name, options)),
        "cut+packets": best_of(runs, cut),
        "versions": len(ingested.rows),
    }


def reference_scripts(reference: Path, work: Path) -> Path | None:
    """The reference's scripts folder: in a checkout, or exported from a (bare) clone."""
    if (reference / SCRIPTS).is_dir():
        return reference / SCRIPTS
    if not (reference / "objects").is_dir() and not (reference / ".git").exists():
        return None
    export = work / "reference"
    export.mkdir()
    archive = subprocess.run(
        ["git", "--git-dir", str(reference if (reference / "objects").is_dir() else
                                 reference / ".git"), "archive", "HEAD", "gpu-wiki"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(export)], input=archive, check=True)
    return export / SCRIPTS


def reference_time(
    scripts: Path, trace: Path, work: Path, runs: int, before_each=None
) -> dict[str, float]:
    """Each deterministic stage of the reference on ``trace``, best of ``runs``;
    ``before_each()`` runs before each of them (gitkb's own run, timed alike)."""
    times = {}
    for stage in REFERENCE_STAGES:
        times[stage] = float("inf")
    for attempt in range(runs):
        if before_each is not None:
            before_each()
        scratch = work / f"reference-run-{attempt}"
        env = dict(
            os.environ,
            RTM_TRACE=str(trace),
            RTM_WORKSPACE=str(scratch / "workspace"),
            RTM_STORE=str(scratch / "staging"),
        )
        for stage in REFERENCE_STAGES:
            start = time.perf_counter()
            run(["python3", f"{stage}.py"], cwd=scripts, env=env)
            times[stage] = min(times[stage], time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--large", type=int, help="versions of the linearity trace (10x)")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--reference",
        type=Path,
        default=os.environ.get("GITKB_ATREX_REFERENCE"),
        help="a checkout or clone of alibaba/atrex-kernel-agent (env GITKB_ATREX_REFERENCE)",
    )
    args = parser.parse_args()
    args.large = args.large or 10 * args.versions
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = installed_env(work, ROOT)  # gitkb as installed: its bytecode kept
        small = legacy(work / "kernel_opt_100_softmax", args.versions)
        large = legacy(work / "kernel_opt_101_softmax", args.large)
        longh = long_horizon(work / "kernel_opt_102_softmax", args.episodes)
        scripts = reference_scripts(args.reference, work) if args.reference else None
        dry_run(small, env)  # untimed: compiles gitkb's bytecode, as installing it does
        rows = []
        for label, path in (("legacy", small), ("legacy, large", large), ("long-horizon", longh)):
            runs = min(2, args.runs) if path is large else args.runs  # 10x: fewer runs
            row = {"trace": label, **stages(path, runs)}
            if not (path is small and scripts):  # else timed between the reference's runs
                row["dry_run"] = best_of(runs, lambda p=path: dry_run(p, env))
            row["git_log"] = best_of(runs, lambda p=path: run(["git", "log", "-p", "--all"],
                                                               cwd=p))  # fmt: skip
            rows.append(row)
        reference = None
        if scripts:
            # One dry run before each run of the reference's stages: the two are compared,
            # so they share the machine's load as it comes and goes.
            small_runs = []
            reference = reference_time(
                scripts, small, work, args.runs,
                lambda: small_runs.append(best_of(1, lambda: dry_run(small, env))),
            )  # fmt: skip
            rows[0]["dry_run"] = min(small_runs)

    print(f"{'trace':14} {'versions':>8} {'ingest':>8} {'cut+pack':>8} {'dry run':>8} "
          f"{'git log -p':>10} {'dry/git':>7}")  # fmt: skip
    for r in rows:
        print(
            f"{r['trace']:14} {r['versions']:8d} {r['ingest']:7.2f}s {r['cut+packets']:7.2f}s "
            f"{r['dry_run']:7.2f}s {r['git_log']:9.2f}s {r['dry_run'] / r['git_log']:6.1f}x"
        )
    small_row, large_row = rows[0], rows[1]
    scale = large_row["dry_run"] / small_row["dry_run"]
    grown = args.large / args.versions
    print(f"linearity: {args.large} versions take {scale:.1f}x the time of {args.versions} "
          f"(versions x{grown:.0f}; target <= {TARGET_LINEARITY}x)")  # fmt: skip
    figure(f"mine --dry-run, {args.large} vs {args.versions} versions", scale, "x",
           TARGET_LINEARITY, "lower")  # fmt: skip
    if reference is not None:
        total = sum(reference.values())
        print("reference stages: " + ", ".join(f"{k} {v:.2f}s" for k, v in reference.items())
              + f" = {total:.2f}s")  # fmt: skip
        speedup = total / small_row["dry_run"]
        print(f"mine --dry-run is {speedup:.1f}x faster than the reference stages "
              f"(target >= {TARGET_VS_REFERENCE}x)")  # fmt: skip
        figure(f"mine --dry-run vs reference stages, {args.versions} versions", speedup, "x",
               TARGET_VS_REFERENCE, "higher")  # fmt: skip
    else:
        ratio = small_row["dry_run"] / small_row["git_log"]
        print(f"no reference given (--reference): mine --dry-run is {ratio:.1f}x "
              f"git log -p --all (target <= {TARGET_VS_GIT_LOG}x)")  # fmt: skip
        figure(f"mine --dry-run / git log -p --all, {args.versions} versions", ratio, "x",
               TARGET_VS_GIT_LOG, "lower")  # fmt: skip


if __name__ == "__main__":
    main()
