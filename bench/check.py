"""`git kb check BASE..HEAD` over 50 admissions onto a 10,000-record store, as a forge's
pull-request job runs it: in a fresh clone, with no index cache (the job starts cold;
the check builds none unless its gates ask the store something), and again with the
cache at BASE in place. Baselines from the same run, over the same range: `git rev-list
BASE..HEAD` (C git walking the range), the server's pre-receive hook given the same
update (`git kb hook pre-receive`) with and without its cache, and what building the
cache costs (paid by the first reader that needs it, not by the check). Target: the
check in a fresh clone <= 2 s.

    python bench/check.py [--records 10000] [--push 50] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402
from stores import GIT_KB, bench_store, fresh_records, store_arguments  # noqa: E402

from gitkb import layout  # noqa: E402
from gitkb.store import Store  # noqa: E402
from gitkb.store.admission import AdmitRequest  # noqa: E402

TARGET_S = 2.0


def timed(argv: list[str], cwd: Path, env: dict, stdin: bytes | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout.decode()}{done.stderr.decode()}")
    return elapsed


def rev_parse(repo: Path, revision: str) -> str:
    done = subprocess.run(["git", "rev-parse", revision], cwd=repo, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def _cold(
    argv: list[str], cwd: Path, git_dir: Path, env: dict, stdin: bytes | None = None
) -> float:
    """``argv`` timed with no index cache under ``git_dir``, as a fresh clone has."""
    shutil.rmtree(git_dir / layout.CACHE_DIR, ignore_errors=True)
    return timed(argv, cwd, env, stdin)


def _build_cache(repo: Path, git_dir: Path, commit: str) -> float:
    """Seconds to build ``repo``'s index cache at ``commit`` from nothing."""
    shutil.rmtree(git_dir / layout.CACHE_DIR, ignore_errors=True)
    store = Store.open(repo)
    start = time.perf_counter()
    store.cache.warm(commit)
    elapsed = time.perf_counter() - start
    store.cache.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_arguments(parser)
    parser.add_argument("--push", type=int, default=50)
    args = parser.parse_args()
    with bench_store(args, ROOT) as (work, store_dir, built_s, env):
        clone = work / "clone"
        if not clone.exists():
            subprocess.run(["git", "clone", "-q", str(store_dir), str(clone)], check=True)
            writer = Store.open(clone)
            writer.admit_many([AdmitRequest(raw) for raw in fresh_records(args.records, args.push)])
            writer.cache.close()
        base, head = rev_parse(clone, "origin/main"), rev_parse(clone, "main")
        argv = [*GIT_KB, "check", "origin/main..main"]
        cold = min(_cold(argv, clone, clone / ".git", env) for _ in range(3))
        build = _build_cache(clone, clone / ".git", base)
        warm = min(timed(argv, clone, env) for _ in range(3))
        rev_list = min(timed(["git", "rev-list", "origin/main..main"], clone, env)
                       for _ in range(3))  # fmt: skip
        # The hook judges a push onto main as the server holds it: main at BASE.
        server = work / "server.git"
        if not server.exists():
            subprocess.run(["git", "clone", "-q", "--bare", str(clone), str(server)], check=True)
        subprocess.run(["git", "update-ref", "refs/heads/main", base], cwd=server, check=True)
        hook_env = dict(env, GIT_DIR=str(server))
        update = f"{base} {head} refs/heads/main\n".encode()
        hook_argv = [*GIT_KB, "hook", "pre-receive"]
        hook_cold = min(_cold(hook_argv, server, server, hook_env, update) for _ in range(3))
        _build_cache(server, server, base)
        hook = min(
            timed([*GIT_KB, "hook", "pre-receive"], server, hook_env, update) for _ in range(3)
        )
    print(f"git kb check over {args.push} admissions onto {args.records} records "
          f"(store built in {built_s:.1f}s)")  # fmt: skip
    print(f"  check, fresh clone (no cache):   {cold:6.2f}s")
    print(f"  check, cache in place:           {warm:6.2f}s")
    print(
        f"  building the cache at BASE:      {build:6.2f}s   (the first reader's, not the check's)"
    )
    print(
        f"  pre-receive hook, no cache:      {hook_cold:6.2f}s   check/hook {cold / hook_cold:.2f}x"
    )
    print(f"  pre-receive hook, cache:         {hook:6.2f}s   check/hook {warm / hook:.2f}x")
    print(f"  git rev-list BASE..HEAD:         {rev_list:6.3f}s   "
          f"check/rev-list {warm / rev_list:.0f}x")  # fmt: skip
    figure(f"check of {args.push} onto {args.records} records, fresh clone", cold, "s",
           TARGET_S, "lower")  # fmt: skip
    figure(f"check of {args.push} onto {args.records} records, cache in place", warm, "s",
           TARGET_S, "lower")  # fmt: skip


if __name__ == "__main__":
    main()
