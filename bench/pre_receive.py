"""Server hook cost: a 50-record push onto a 1,000- and a 10,000-record store.

Each push is a real `git push` of 50 admissions (one commit each) into a bare
store with the pre-receive hook installed; the baseline is the same push into a
copy of the store with no hook. The hook's own time is also measured alone (the
hook run on the already-received push). Targets: pushes <= 1 s each, the
10,000/1,000 ratio <= 1.5.

    python bench/pre_receive.py [--sizes 1000 10000] [--push 50]
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

from gitkb import record as rec  # noqa: E402
from gitkb import synthetic  # noqa: E402
from gitkb.store import BRANCH, AdmitRequest, Store  # noqa: E402
from gitkb.vcs.trailers import format_message  # noqa: E402

TARGET_PUSH_S = 1.0
TARGET_RATIO = 1.5


def build_store(path: Path, size: int) -> None:
    """A bare store of ``size`` generated records, written as one import commit
    (the gates are not the subject here, so they are not run while building)."""
    store = Store.init(path, bare=True)
    index = store.view()
    edits: dict[str, bytes | None] = {}
    for n in range(size):
        record = synthetic.strategy(n)
        path_in_store = rec.path_for(record)
        edits[path_in_store] = rec.dumps(record)
        index.put(rec.index_entry(record, path_in_store))
    edits[rec.INDEX_PATH] = index.dumps()
    message = format_message(
        f"kb import synthetic-{size}",
        f"{size} generated records.",
        [("KB-Action", "import"), ("KB-Record", f"synthetic-{size}")],
    )
    with store.repo.batch():
        commit = store.repo.write_commit(store.tip, edits, message)
    store.repo.update_ref(BRANCH, store.tip, commit)


def git(*args: str, cwd: Path | None = None, env: dict | None = None, data: bytes | None = None):
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, input=data, capture_output=True, check=True
    )


def timed_push(client: Path, server: Path, env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        ["git", "push", "-q", str(server), "main"], cwd=client, env=env, capture_output=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"push into {server} failed:\n{done.stderr.decode()}")
    return elapsed


def measure(work: Path, size: int, pushed: int, env: dict) -> dict:
    base = work / f"base-{size}.git"
    build_store(base, size)
    client = work / f"client-{size}.git"
    git("clone", "-q", "--bare", str(base), str(client))
    for name in ("plain", "hooked"):
        git("clone", "-q", "--bare", str(base), str(work / f"{name}-{size}.git"))
    subprocess.run(
        ["git-kb", "hooks", "install", "--server", str(work / f"hooked-{size}.git")],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    store = Store.open(client)
    old = store.tip
    requests = [
        AdmitRequest(rec.dumps(synthetic.strategy(size + 100_000 + n))) for n in range(pushed)
    ]
    store.admit_many(requests)
    new = store.tip

    plain = timed_push(client, work / f"plain-{size}.git", env)
    hooked = timed_push(client, work / f"hooked-{size}.git", env)
    # The hook alone, on the push the plain server already holds.
    hook_env = dict(env, GIT_DIR=str(work / f"plain-{size}.git"))
    start = time.perf_counter()
    done = subprocess.run(
        ["git-kb", "hook", "pre-receive"],
        input=f"{old} {new} refs/heads/main\n".encode(),
        env=hook_env,
        capture_output=True,
    )
    hook_alone = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the hook refused a good push:\n{done.stderr.decode()}")
    index_mb = len(store.repo.read(new, rec.INDEX_PATH) or b"") / 1e6
    return {"plain": plain, "hooked": hooked, "hook": hook_alone, "index_mb": index_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 10000])
    parser.add_argument("--push", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bin_dir = work / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "git-kb"
        wrapper.write_text(
            f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m gitkb "$@"\n'
        )
        wrapper.chmod(0o755)
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        small, large = (measure(work, size, args.push, env) for size in args.sizes)
    print(f"push of {args.push} admissions (one commit each) into a bare store")
    print(f"{'store':>8} {'no hook':>9} {'with hook':>10} {'hook alone':>11} {'index.json':>11}")
    for size, figures in zip(args.sizes, (small, large), strict=True):
        print(
            f"{size:>8} {figures['plain']:>8.2f}s {figures['hooked']:>9.2f}s "
            f"{figures['hook']:>10.2f}s {figures['index_mb']:>9.1f}MB"
        )
    ratio = large["hooked"] / small["hooked"]
    hook_ratio = large["hook"] / small["hook"]
    baseline_ratio = large["plain"] / small["plain"]
    print(
        f"ratio {args.sizes[1]}/{args.sizes[0]}: with hook {ratio:.2f}   hook alone "
        f"{hook_ratio:.2f}   no-hook baseline {baseline_ratio:.2f}   (target <= {TARGET_RATIO})"
    )
    for size, figures in zip(args.sizes, (small, large), strict=True):
        print(
            f"hook share of the push at {size}: {figures['hooked'] / figures['plain']:.2f}x the "
            "no-hook push"
        )
    for size, measured in zip(args.sizes, (small, large), strict=True):
        figure(f"push of {args.push} onto {size} records", measured["hooked"], "s",
               TARGET_PUSH_S, "lower")  # fmt: skip
    figure(f"push time ratio {args.sizes[1]}/{args.sizes[0]}", ratio, "x", TARGET_RATIO, "lower")
    figure(f"hook-only time ratio {args.sizes[1]}/{args.sizes[0]}", hook_ratio, "x",
           TARGET_RATIO, "lower")  # fmt: skip


if __name__ == "__main__":
    main()
