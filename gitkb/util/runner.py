"""The one subprocess runner: harness evaluations, agent providers and the external distiller.

A command runs under a supervisor: this file run as a script (``python -I -S``),
in a session of its own. On Linux the supervisor makes itself a child
subreaper, so every descendant of the command stays below it even after a
``setsid`` or a double fork (an orphan is re-parented to the nearest subreaper,
not to init); it finds them by walking ``/proc``. When the command exits, any
descendant still running gets SIGTERM, then SIGKILL after the grace period;
on a timeout (or when the caller is interrupted) the command and every
descendant get the same. The supervisor reaps everything before it reports,
and dies with its caller (``PR_SET_PDEATHSIG``), cleaning up first. Should the
supervisor itself be killed, the caller kills what still carries the run's
token in its environment. Elsewhere than Linux only the command's process
group is reached.

The supervisor imports nothing but ``os``, ``signal``, ``sys``, ``time`` and
``ctypes``, so it starts in a few milliseconds; the library half below imports
what it needs inside its functions.
"""

from __future__ import annotations

import os
import signal
import sys
import time

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


def _signal_all(pids, sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


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
    _signal_all(targets, signal.SIGTERM)
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    if not _wait_gone(pgid, time.monotonic() + grace_s):
        # SIGKILLed processes cannot fork; whatever forked meanwhile is caught next pass.
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            left = live_descendants(me)
            if not left and not _group_alive(pgid):
                break
            _signal_all(left, signal.SIGKILL)
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
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
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:  # the caller died before the line above
        os.kill(os.getpid(), signal.SIGTERM)


def _supervise(args: list[str]) -> int:
    """``STATUS TIMEOUT GRACE PARENT -- ARGV...``: run ARGV, contain it, write STATUS."""
    status_path, timeout_s, grace_s, parent = args[0], float(args[1]), float(args[2]), int(args[3])
    argv = args[5:]

    def stop(why):
        def handler(signum, frame):
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


# --------------------------------------------------------------------------- the caller's half


class Outcome:
    """What running one command came to."""

    __slots__ = (
        "argv",
        "returncode",
        "timed_out",
        "seconds",
        "strays",
        "stdout",
        "stderr",
        "error",
    )

    def __init__(self, argv, returncode, timed_out, seconds, strays=0, error=None):
        self.argv = argv
        self.returncode = returncode  # negative: killed by that signal; None: did not end
        self.timed_out = timed_out
        self.seconds = seconds
        self.strays = strays  # processes still running when it ended, killed by the supervisor
        self.stdout = b""
        self.stderr = b""
        self.error = error  # could not start, or the supervisor failed: why

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.returncode == 0

    def describe(self) -> str:
        """One phrase: how the command ended."""
        if self.error:
            return self.error
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s (it and every process it started killed)"
        if self.returncode is not None and self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"killed by {name}"
        return f"exited with status {self.returncode}"


def run(
    argv: list[str],
    *,
    timeout_s: float,
    cwd=None,
    env: dict[str, str] | None = None,
    stdin=None,
    output=None,
    output_cap: OutputCap | None = None,
    capture: bool = False,
    grace_s: float = KILL_GRACE_S,
) -> Outcome:
    """Run ``argv`` contained (see the module docstring) and return its Outcome.

    ``stdin``: a path (the file is the command's input), bytes, or None (nothing).
    ``output``: a path that gets stdout and stderr together, held to ``output_cap``
    while the command writes when one is given; ``capture``: return them in the
    Outcome instead; neither: both discarded. Never raises for the command's failure;
    an interrupt of the caller kills the whole tree before it propagates.
    """
    import secrets
    import subprocess
    import tempfile

    token = secrets.token_hex(8)
    # Here, not at the top: the supervisor runs this file as a script and stays light.
    import shlex

    from gitkb.util import log as notes

    command = shlex.join(str(arg) for arg in argv)
    notes.logger(__name__).debug("running %s (timeout %ss)", command, timeout_s)
    full_env = dict(os.environ if env is None else env)
    full_env[TOKEN_VARIABLE] = token
    with tempfile.TemporaryDirectory(prefix="gitkb-run-") as scratch:
        scratch_dir = os.fspath(scratch)
        status = os.path.join(scratch_dir, "status")
        if isinstance(stdin, bytes | bytearray):
            stdin_path = os.path.join(scratch_dir, "stdin")
            with open(stdin_path, "wb") as fh:
                fh.write(stdin)
            stdin = stdin_path
        out_path = os.fspath(output) if output is not None else None
        err_path = None
        if capture:
            out_path = os.path.join(scratch_dir, "stdout")
            err_path = os.path.join(scratch_dir, "stderr")
        supervisor = [
            sys.executable, "-I", "-S", os.path.abspath(__file__),
            status, repr(float(timeout_s)), repr(float(grace_s)), str(os.getpid()), "--", *argv,
        ]  # fmt: skip
        start = time.monotonic()
        null = subprocess.DEVNULL
        capped = _CappedOutput(out_path, output_cap) if output_cap and out_path else None
        with _opened(stdin, "rb") as fin, _opened(out_path if not capped else None, "wb") as fout:
            with _opened(err_path, "wb") as ferr:
                out = subprocess.PIPE if capped else (null if fout is None else fout)
                err = subprocess.STDOUT if capped or fout is not None else null
                process = subprocess.Popen(
                    supervisor,
                    stdin=null if fin is None else fin,
                    stdout=out,
                    stderr=ferr if ferr is not None else err,
                    cwd=cwd,
                    env=full_env,
                    start_new_session=True,
                )
        try:
            if capped is not None:
                capped.drain(process.stdout)
            _await(process, timeout_s + grace_s + 15.0, grace_s, token)
        finally:
            if capped is not None:
                capped.close(grace_s + 5.0)
        seconds = time.monotonic() - start
        outcome = _read_status(status, argv, seconds, process.returncode)
        if outcome.error and process.returncode != 0:
            sweep(token)
        if capture:
            outcome.stdout = _read(out_path)
            outcome.stderr = _read(err_path)
        return outcome


class OutputCap:
    """How much of a command's output ``run`` keeps: the first ``head`` bytes and the last
    ``tail``, with a line saying what was dropped between them (``what``: whose output)."""

    __slots__ = ("head", "tail", "what")

    def __init__(self, head: int, tail: int, what: str = "output") -> None:
        self.head, self.tail, self.what = head, tail, what


class _CappedOutput:
    """A command's output written to a file up to a cap as it streams: the head goes to
    the file, only the last ``tail`` bytes are held in memory, and the notice and the
    tail are written when the command is done. The file never holds more than the cap
    and the notice, however much the command prints."""

    def __init__(self, path, cap: OutputCap) -> None:
        import threading

        self._fh = open(path, "wb")
        self._cap = cap
        self._written = 0  # bytes of the head written
        self._total = 0
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def drain(self, pipe) -> None:
        """Read ``pipe`` on a thread until every writer has closed it."""
        import threading

        self._reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._reader.start()

    def _read(self, pipe) -> None:
        with pipe:
            while chunk := os.read(pipe.fileno(), 1 << 16):
                self._write(chunk)

    def _write(self, chunk: bytes) -> None:
        with self._lock:
            if self._fh.closed:
                return  # a straggler still writing after the run was closed
            self._total += len(chunk)
            room = self._cap.head - self._written
            if room > 0:
                self._fh.write(chunk[:room])
                self._written += min(room, len(chunk))
                chunk = chunk[room:]
            if chunk:
                self._tail += chunk
                del self._tail[: max(0, len(self._tail) - self._cap.tail)]

    def close(self, wait_s: float) -> None:
        """Wait for the pipe's end (every descendant is gone by now, so it comes at
        once), then write the notice and the tail."""
        if self._reader is not None:
            self._reader.join(wait_s)
        with self._lock:
            dropped = self._total - self._written - len(self._tail)
            if dropped > 0:
                self._fh.write(
                    f"\n[gitkb] {self._cap.what} truncated: {dropped} bytes dropped after the "
                    f"first {self._written}; the last {len(self._tail)} follow\n".encode()
                )
            self._fh.write(self._tail)
            self._fh.close()


class _opened:
    """``open(path, mode)`` as a context manager that yields None for a None path."""

    def __init__(self, path, mode: str) -> None:
        self.fh = open(path, mode) if path is not None else None

    def __enter__(self):
        return self.fh

    def __exit__(self, *exc) -> None:
        if self.fh is not None:
            self.fh.close()


def _await(process, backstop_s: float, grace_s: float, token: str) -> None:
    """Wait for the supervisor; on an interrupt, let it clean up first, then re-raise."""
    import subprocess

    try:
        _wait_exit(process, backstop_s)
    except subprocess.TimeoutExpired:  # the supervisor itself hangs (stopped, starved)
        _kill_group(process.pid)
        process.wait()
        sweep(token)
    except BaseException:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=grace_s + 5.0)
        except BaseException:
            _kill_group(process.pid)
            process.wait()
        sweep(token)
        raise


def _wait_exit(process, timeout_s: float) -> None:
    """``process.wait(timeout)`` without its polling sleeps (up to 50 ms each): a pidfd
    becomes readable the moment the process exits (Linux 5.3+)."""
    import select
    import subprocess

    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        process.wait(timeout=timeout_s)
        return
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(timeout_s * 1000):
            raise subprocess.TimeoutExpired(process.args, timeout_s)
    finally:
        os.close(pidfd)
    process.wait()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except (OSError, TypeError):
        return b""


def _read_status(path: str, argv, seconds: float, supervisor_code) -> Outcome:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except OSError:
        return Outcome(
            argv,
            None,
            False,
            seconds,
            error=f"the process supervisor ended with status {supervisor_code} and no report",
        )
    returncode = None if lines[0] == "None" else int(lines[0])
    return Outcome(
        argv,
        returncode,
        lines[1] == "timeout",
        float(lines[2]),
        strays=int(lines[3]),
        error=lines[4] or ("cancelled" if lines[1] == "cancelled" else None),
    )


def sweep(token: str) -> int:
    """SIGKILL every process whose environment carries this run's token (the net behind the
    supervisor); returns how many were found."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    me = os.getpid()
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(name))
    _signal_all(found, signal.SIGKILL)
    return len(found)
