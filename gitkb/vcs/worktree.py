"""The work tree and the writer lock: what a commit written without a work tree needs
to leave behind it. Writers on one repository are serialized by an ``flock`` on
``gitkb-writer.lock`` in the git directory (the kernel drops it when a holder dies);
checked-out files follow each commit written without them, through a temporary file
renamed into place."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

from gitkb.errors import LockTimeout
from gitkb.util import log
from gitkb.util.files import atomic_write
from gitkb.vcs.objects.tree import FILE_MODE
from gitkb.vcs.repository import WORK_TREE_TMP, Repository

logger = log.logger(__name__)

# A ref lock that is still there this long after we took the writer lock was
# left by a killed process: C git holds such locks for milliseconds.
_STALE_REF_LOCK_WAIT_S = 1.0


def sync_work_tree(repo: Repository, branch_ref: str, commit: str, paths: list[str]) -> None:
    """After a commit written without a work tree, bring the checked-out files and the
    index entries of ``paths`` up to ``commit`` (only when HEAD is on ``branch_ref``)."""
    work_tree = repo.work_tree
    if work_tree is None or head_branch(repo) != branch_ref:
        return
    from dulwich.index import index_entry_from_stat  # a bare store never loads it

    index = repo.open_index()
    for path in paths:
        target = work_tree / path
        sha = repo.blob_sha(commit, path)
        key = path.encode()
        if sha is None:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            if key in index:
                del index[key]
            continue
        atomic_write(target, repo.blob(sha), tmp_dir=repo.git_dir / WORK_TREE_TMP)
        index[key] = index_entry_from_stat(os.lstat(target), sha.encode(), FILE_MODE)
    index.write()


def head_branch(repo: Repository) -> str | None:
    """The branch HEAD names, when HEAD is symbolic (read from git's own HEAD file)."""
    try:
        target = (repo.git_dir / "HEAD").read_text("utf-8", "replace").strip()
    except OSError:
        return None
    return target[5:].strip() if target.startswith("ref: ") else None


# ----------------------------------------------------------------- locking


@contextlib.contextmanager
def writer_lock(repo: Repository, timeout: float | None = None) -> Iterator[bool]:
    """Serialize gitkb writers on this repository; yields True when a crashed writer
    held the lock last (the caller then repairs what that writer may have left).

    An ``flock`` on ``gitkb-writer.lock`` in the git directory: the kernel
    drops it when a holder dies, and the holder's pid written inside tells
    the next writer that a crash happened.
    """
    if timeout is None:
        timeout = float(os.environ.get("GITKB_LOCK_TIMEOUT", "120"))
    path = repo.git_dir / "gitkb-writer.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeout(
                        f"{path}: another gitkb writer held the lock for over {timeout:.0f} s"
                    ) from None
                time.sleep(0.005)
        previous = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        if previous:
            logger.warning(
                "recovered the writer lock of %s: process %s stopped while holding it",
                repo.git_dir,
                previous,
            )
            _clear_stale_locks(repo)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield bool(previous)
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _clear_stale_locks(repo: Repository) -> None:
    """Remove the ``.lock`` files a killed writer left on refs, the index and loose objects."""
    candidates = [repo.git_dir / "index.lock", repo.git_dir / "packed-refs.lock"]
    candidates += list((repo.git_dir / "refs").rglob("*.lock"))
    deadline = time.monotonic() + _STALE_REF_LOCK_WAIT_S
    for lock in candidates:
        while lock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if lock.exists():
            lock.unlink()
            logger.warning("removed stale lock %s", lock)
    partials = [
        *(repo.git_dir / "objects").glob("??/*.lock"),
        *(repo.git_dir / WORK_TREE_TMP).glob("*"),
    ]
    for partial in partials:
        partial.unlink(missing_ok=True)


def repair_work_tree(repo: Repository, branch_ref: str) -> None:
    """Bring every checked-out file whose index entry lags ``branch_ref`` up to it:
    after a writer died between moving the ref and updating the work tree."""
    if repo.work_tree is None or head_branch(repo) != branch_ref:
        return
    tip = repo.resolve(branch_ref)
    if tip is None:
        return
    index = repo.open_index()
    stale = [
        (new or old).decode("utf-8", "surrogateescape")
        for (old, new), _, _ in index.changes_from_tree(repo.object_store, repo.tree_of(tip))
    ]
    if stale:
        sync_work_tree(repo, branch_ref, tip, stale)
        logger.warning("repaired %d work-tree files left behind by the crash", len(stale))
