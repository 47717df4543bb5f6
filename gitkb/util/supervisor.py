"""The process supervisor of ``gitkb.util.runner``, run as a script (``python -I -S``) in
a session of its own: ``STATUS TIMEOUT GRACE PARENT -- ARGV...``.

On Linux it makes itself a child subreaper, so every descendant of the command stays
below it even after a ``setsid`` or a double fork (an orphan is re-parented to the
nearest subreaper, not to init); it finds them by walking ``/proc``. When the command
exits, any descendant still running gets SIGTERM, then SIGKILL after the grace period;
on a timeout (or when the caller is interrupted) the command and every descendant get
the same. It reaps everything before it writes STATUS, and dies with its caller
(``PR_SET_PDEATHSIG``), cleaning up first. It imports the standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import NoReturn

KILL_GRACE_S = 2.0
TOKEN_VARIABLE = "GITKB_RUN_TOKEN"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# Signals Python ignores for itself that a spawned command must get back at their defaults.
_DEFAULT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)
)


# --------------------------------------------------------------------------- process table


def live_descendants(root: int) -> list[int]:
    """Every live (not zombie) process below ``root``, found through ``/proc``; [] where there
    is no ``/proc``."""
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        pid = int(name)
        states[pid] = fields[0].decode()
        children.setdefault(int(fields[1]), []).append(pid)
    found, queue = [], list(children.get(root, []))
    while queue:
        pid = queue.pop()
        if states.get(pid) not in ("Z", "X"):
            found.append(pid)
        queue.extend(children.get(pid, []))
    return found


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _reap() -> None:
    """Collect every exited child (re-parented orphans included) without blocking."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _wait_gone(pgid: int, deadline: float) -> bool:
    """Wait until nothing below this process (and nothing in ``pgid``) lives; True if so."""
    while True:
        _reap()
        if not live_descendants(os.getpid()) and not _group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _terminate_tree(pgid: int, grace_s: float) -> list[int]:
    """SIGTERM to everything below this process, SIGKILL to what is left after ``grace_s``;
    returns the processes the first signal reached."""
    me = os.getpid()
    targets = live_descendants(me)
    if not targets and not _group_alive(pgid):
        return targets  # the usual end: nothing left behind
    signal_all(targets, signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    if not _wait_gone(pgid, time.monotonic() + grace_s):
        # SIGKILLed processes cannot fork; whatever forked meanwhile is caught next pass.
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            left = live_descendants(me)
            if not left and not _group_alive(pgid):
                break
            signal_all(left, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            _reap()
            time.sleep(0.005)
    _wait_gone(pgid, time.monotonic() + 1.0)
    return targets


# --------------------------------------------------------------------------- the supervisor


class _Stop(BaseException):
    """A signal ended the wait: the timeout (SIGALRM) or the caller (SIGTERM, SIGINT, SIGHUP)."""

    def __init__(self, why: str) -> None:
        self.why = why


def _contain_self(parent: int) -> None:
    """Become a child subreaper and die with the caller (Linux; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:  # the caller died before the line above
        os.kill(os.getpid(), signal.SIGTERM)


def _supervise(args: list[str]) -> int:
    """``STATUS TIMEOUT GRACE PARENT -- ARGV...``: run ARGV, contain it, write STATUS."""
    status_path, timeout_s, grace_s, parent = args[0], float(args[1]), float(args[2]), int(args[3])
    argv = args[5:]

    def stop(why: str) -> Callable[[int, FrameType | None], NoReturn]:
        def handler(signum: int, frame: FrameType | None) -> NoReturn:
            raise _Stop(why)

        return handler

    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), stop("cancelled"))
    signal.signal(signal.SIGALRM, stop("timeout"))
    returncode, why, error, pid = None, "", "", 0
    start = time.monotonic()
    try:
        _contain_self(parent)
        try:
            pid = os.posix_spawnp(
                argv[0], argv, dict(os.environ), setpgroup=0, setsigdef=_DEFAULT_SIGNALS
            )
        except OSError as exc:
            error = f"{exc.strerror or exc}: {argv[0]}".replace("\n", " ")
        if pid:
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
            while True:  # reap orphans as they die, until the command itself ends
                done, status = os.waitpid(-1, 0)
                if done == pid:
                    returncode = os.waitstatus_to_exitcode(status)
                    break
    except _Stop as stopped:
        why = stopped.why
    seconds = time.monotonic() - start
    signal.setitimer(signal.ITIMER_REAL, 0)
    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGALRM"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)  # cleanup runs to its end
    strays = len([p for p in _terminate_tree(pid, grace_s) if p != pid]) if pid else 0
    _reap()
    tmp = status_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(f"{returncode}\n{why}\n{seconds:.6f}\n{strays}\n{error}\n")
    os.replace(tmp, status_path)
    return 0


if __name__ == "__main__":
    sys.exit(_supervise(sys.argv[1:]))
