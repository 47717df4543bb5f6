"""Server hook cost: a 50-admission push onto stores of several sizes.

Each push is a real `git push` of 50 admissions (one commit each) into a bare store
with the pre-receive hook installed (`git kb hooks install --server`, which also
builds the server's index cache, as a server in service has it); the baseline is
the same push into a copy of the store with no hook. The hook's own time is also
measured alone, on the push the plain server already received. Targets (store
format 2): the push onto 10,000 records <= 1 s and <= 1.3x the push onto 1,000;
(--large) onto 100,000 records within 1.5x of 10,000.

    python bench/pre_receive.py [--sizes 1000 10000] [--large] [--push 50] [--against REV]

``--against REV`` also pushes into a third copy whose hook is gitkb as of REV (a git
revision of this checkout, extracted beside the run), so the old hook's figures come
from the same run as the new one's, with the ratio of the two (this/old) beside them.

``--signed`` also pushes the same 50 admissions signed (ssh keys made by ssh-keygen)
into a copy of the store with access on (``git kb access init``, the server's anchor
naming its admin), so each commit's signature is checked against its parent's
``access/allowed_signers``; target: <= 1.5x the unsigned push.

Each push (and the hook alone) is timed as the best of three, the server's main put back
before each.
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
from stores import build_store, fresh_records  # noqa: E402

from gitkb.store.admission import AdmitRequest  # noqa: E402

TARGET_PUSH_S = 1.0
TARGET_RATIO_10K = 1.3
TARGET_RATIO_100K = 1.5
TARGET_SIGNED_RATIO = 1.5
RUNS = 3  # each push and the hook alone: the best of this many


def git(*args: str, cwd: Path | None = None, env: dict | None = None):
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True)


def timed_push(client: Path, server: Path, env: dict) -> float:
    """The best of ``RUNS`` pushes of the client's main into ``server``, its main put back
    where it was before each (the objects stay: git sends them again all the same, as it
    advertises refs only)."""
    held = git("rev-parse", "main", cwd=server).stdout.decode().strip()
    best = float("inf")
    for _ in range(RUNS):
        git("update-ref", "refs/heads/main", held, cwd=server)
        start = time.perf_counter()
        done = subprocess.run(
            ["git", "push", "-q", str(server), "main"], cwd=client, env=env, capture_output=True
        )
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"push into {server} failed:\n{done.stderr.decode()}")
    return best


def measure(work: Path, size: int, pushed: int, env: dict, against: Path | None) -> dict:
    base = build_store(work / f"base-{size}.git", size)
    client = work / f"client-{size}.git"
    git("clone", "-q", "--bare", str(base.location), str(client))
    for name in ("plain", "hooked", "old"):
        git("clone", "-q", "--bare", str(base.location), str(work / f"{name}-{size}.git"))
    subprocess.run(
        ["git-kb", "hooks", "install", "--server", str(work / f"hooked-{size}.git")],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    old_env = dict(env, PYTHONPATH=str(against)) if against else None
    if old_env:
        subprocess.run(
            [sys.executable, "-m", "gitkb", "hooks", "install", "--server",
             str(work / f"old-{size}.git")], env=old_env, check=True, capture_output=True,
            cwd=against,  # python -m puts the working folder first on the path
        )  # fmt: skip
    from gitkb.store import Store

    store = Store.open(client)
    old = store.tip
    store.admit_many([AdmitRequest(raw) for raw in fresh_records(size, pushed)])
    new = store.tip
    plain = timed_push(client, work / f"plain-{size}.git", env)
    hooked = timed_push(client, work / f"hooked-{size}.git", env)
    old_hooked = timed_push(client, work / f"old-{size}.git", old_env) if old_env else None
    # The hook alone, on the push the plain server already holds (its cache built first,
    # at the commit before the push, as the hooked server's install built it).
    plain_dir = work / f"plain-{size}.git"
    subprocess.run(["git-kb", "reindex", "--store", str(plain_dir)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    git("update-ref", "refs/heads/main", old, cwd=plain_dir)
    subprocess.run(["git-kb", "list", "--store", str(plain_dir)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    hook_env = dict(env, GIT_DIR=str(plain_dir))
    hook_alone = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(
            ["git-kb", "hook", "pre-receive"],
            input=f"{old} {new} refs/heads/main\n".encode(),
            env=hook_env,
            capture_output=True,
        )
        hook_alone = min(hook_alone, time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"the hook refused a good push:\n{done.stderr.decode()}")
    return {"plain": plain, "hooked": hooked, "hook": hook_alone, "old": old_hooked}


def measure_signed(work: Path, size: int, pushed: int, env: dict) -> float:
    """The hooked push of ``pushed`` signed admissions onto ``size`` records, access on."""
    from gitkb.store import Store, access

    keys = work / f"keys-{size}"
    keys.mkdir()
    for name in ("admin", "contributor"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                        "-f", str(keys / name)], check=True)  # fmt: skip
    key = {n: access.key_of((keys / f"{n}.pub").read_text(), n) for n in ("admin", "contributor")}
    base = build_store(work / f"signed-base-{size}.git", size).location

    def sign(repo: Path, name: str) -> None:
        for option, value in (("commit.gpgsign", "true"), ("gpg.format", "ssh"),
                              ("user.signingkey", str(keys / name))):  # fmt: skip
            git("config", option, value, cwd=repo)

    sign(base, "admin")
    access.init(Store.open(base), "admin", key["admin"])
    access.add(Store.open(base), "contributor", key["contributor"])
    anchor = work / "admins"
    anchor.write_text(f'admin namespaces="git" {(keys / "admin.pub").read_text()}')
    server, client = work / f"signed-hooked-{size}.git", work / f"signed-client-{size}.git"
    for target in (server, client):
        git("clone", "-q", "--bare", str(base), str(target))
    subprocess.run(["git-kb", "hooks", "install", "--server", str(server), "--admins",
                    str(anchor)], env=env, check=True, capture_output=True)  # fmt: skip
    sign(client, "contributor")
    store = Store.open(client)
    store.admit_many([AdmitRequest(raw) for raw in fresh_records(size, pushed)])
    return timed_push(client, server, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--large", action="store_true", help="Add a 100,000-record store.")
    parser.add_argument("--push", type=int, default=50)
    parser.add_argument("--against", metavar="REV", help="Also time the hook of gitkb at REV.")
    parser.add_argument("--signed", action="store_true", help="Also time a signed push.")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes) | ({100_000} if args.large else set()))
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
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # bytecode, as installed
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        against = None
        if args.against:
            against = work / "against"
            against.mkdir()
            archive = subprocess.run(["git", "archive", args.against], cwd=ROOT,
                                     capture_output=True, check=True)  # fmt: skip
            subprocess.run(["tar", "-x", "-C", str(against)], input=archive.stdout, check=True)
        rows = {size: measure(work, size, args.push, env, against) for size in sizes}
        signed = {s: measure_signed(work, s, args.push, env) for s in sizes if args.signed}
    print(f"push of {args.push} admissions (one commit each) into a bare store, "
          f"best of {RUNS}")  # fmt: skip
    against_head = f" {'hook of ' + args.against:>16} {'this/old':>10}" if args.against else ""
    print(f"{'store':>8} {'no hook':>9} {'with hook':>10} {'hook alone':>11}{against_head}")
    for size, row in rows.items():
        old = ""
        if row["old"] is not None:  # the push into the copy with the hook of --against
            old = f" {row['old']:>15.2f}s {row['hooked'] / row['old']:>9.2f}x"
        print(f"{size:>8} {row['plain']:>8.2f}s {row['hooked']:>9.2f}s {row['hook']:>10.2f}s{old}")
    pairs = ((1000, 10000, TARGET_RATIO_10K), (10000, 100_000, TARGET_RATIO_100K))
    for small, large, target in pairs:
        if small in rows and large in rows:
            ratio = rows[large]["hooked"] / rows[small]["hooked"]
            hook_ratio = rows[large]["hook"] / rows[small]["hook"]
            baseline = rows[large]["plain"] / rows[small]["plain"]
            print(
                f"ratio {large}/{small}: with hook {ratio:.2f}   hook alone {hook_ratio:.2f}   "
                f"no-hook baseline {baseline:.2f}   (target <= {target})"
            )
            figure(f"push time ratio {large}/{small}", ratio, "x", target, "lower")
            if rows[large]["old"] is not None:
                old_ratio = rows[large]["old"] / rows[small]["old"]
                print(f"ratio {large}/{small} with the hook of {args.against}: {old_ratio:.2f}")
    for size, seconds in signed.items():
        ratio = seconds / rows[size]["hooked"]
        verdict = "met" if ratio <= TARGET_SIGNED_RATIO else "MISSED"
        print(f"signed/unsigned push onto {size}: {seconds:.2f}s / {rows[size]['hooked']:.2f}s "
              f"= {ratio:.2f}x (target <= {TARGET_SIGNED_RATIO}x: {verdict})")  # fmt: skip
        figure(f"signed/unsigned push onto {size} records", ratio, "x", TARGET_SIGNED_RATIO,
               "lower")  # fmt: skip
    for size, row in rows.items():
        print(f"hook share of the push at {size}: {row['hooked'] / row['plain']:.2f}x no-hook")
        if size >= 10000:
            figure(f"push of {args.push} onto {size} records", row["hooked"], "s",
                   TARGET_PUSH_S, "lower")  # fmt: skip


if __name__ == "__main__":
    main()
