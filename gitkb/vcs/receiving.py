"""What a push in progress on a server has announced, beside git's own ref locks.

git runs ``receive-pack`` once per push; its pre-receive hook and each of its
reference-transaction hooks are its children. Without ``--atomic`` it moves each ref
in a transaction of its own, ``main`` before ``refs/kb/traces/*``, so the hook
checking main cannot see the trace ref the same push is about to create. The
pre-receive hook therefore leaves a plan: the trace refs this push will move (old,
new) and the trace commits its move of main needs them for. A plan lives as long as
its ``receive-pack`` does; the reference-transaction hooks read the plans, and the
``.lock`` files git holds on refs, to decide with the locks held.

Every refused push also leaves one line in the server's refusal log
(``gitkb-refusals.jsonl`` in the git directory): when, who the host says pushed, and
the refusal lines the client saw.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitkb.util.files import atomic_write

if TYPE_CHECKING:
    from gitkb.vcs.repository import Repository

PLANS_DIR = "gitkb-pushes"
REFUSALS_LOG = "gitkb-refusals.jsonl"


@dataclass(frozen=True)
class Plan:
    """One push's announced trace-ref moves and the (label, trace commit) pairs its move
    of main cites before any trace ref reaches them."""

    push: int  # the receive-pack process
    updates: dict[str, tuple[str | None, str | None]]
    needs: tuple[tuple[str, str], ...]


def this_push() -> int:
    """The receive-pack process a hook runs under (hooks are its direct children)."""
    return os.getppid()


def clear_plan(repo: Repository) -> None:
    """Remove the plan file of this push's process id (one an earlier process of the same
    id may have left)."""
    with contextlib.suppress(OSError):
        (repo.git_dir / PLANS_DIR / f"{this_push()}.json").unlink()


def write_plan(repo: Repository, plan: Plan) -> None:
    folder = repo.git_dir / PLANS_DIR
    document = {
        "updates": {ref: list(sides) for ref, sides in plan.updates.items()},
        "needs": [list(need) for need in plan.needs],
    }
    atomic_write(folder / f"{plan.push}.json", json.dumps(document).encode())


def live_plans(repo: Repository) -> list[Plan]:
    """The plans of pushes still in progress; those of finished ones are removed."""
    folder = repo.git_dir / PLANS_DIR
    plans = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        push = int(path.stem) if path.stem.isdigit() else -1
        if push <= 0 or not _alive(push):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        try:
            document = json.loads(path.read_bytes())
            updates = {ref: (old, new) for ref, (old, new) in document["updates"].items()}
            needs = tuple((label, commit) for label, commit in document["needs"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or not ours: it announces nothing
        plans.append(Plan(push, updates, needs))
    return plans


def pushed_bytes() -> int:
    """Bytes of the objects this push brought, as the server holds them: git keeps a
    push's pack (or its loose objects) in a quarantine folder until its pre-receive hook
    has passed, and names it in GIT_QUARANTINE_PATH (0 where it names none: a hook run
    by hand)."""
    root = os.environ.get("GIT_QUARANTINE_PATH")
    total = 0
    for folder, _, names in os.walk(root) if root else ():
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def ref_locked(repo: Repository, ref: str) -> bool:
    """Whether some transaction holds git's lock on ``ref`` now."""
    return (repo.git_dir / f"{ref}.lock").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Refusal:
    """One refused push, as the server's refusal log keeps it."""

    at: str  # when, UTC, ISO 8601 to the second
    pusher: str | None  # who the host says pushed (None: the transport names no one)
    via: str | None  # the host's variable that named them: GL_USER, REMOTE_USER
    problems: tuple[str, ...]  # the refusal lines the client saw, without "gitkb: "


def log_refusal(repo: Repository, refusal: Refusal) -> None:
    """Append ``refusal`` to the repository's refusal log, one JSON line in one write (so
    concurrent pushes' lines never interleave)."""
    line = json.dumps(
        {
            "at": refusal.at,
            "pusher": refusal.pusher,
            "via": refusal.via,
            "problems": list(refusal.problems),
        }
    )
    fd = os.open(repo.git_dir / REFUSALS_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def refusals(repo: Repository) -> list[Refusal]:
    """The refusal log, oldest first (a line that does not parse is skipped)."""
    try:
        lines = (repo.git_dir / REFUSALS_LOG).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
            out.append(Refusal(entry["at"], entry["pusher"], entry["via"],
                               tuple(entry["problems"])))  # fmt: skip
        except (ValueError, KeyError, TypeError):
            continue
    return out
