"""The one subprocess runner: harness evaluations, agent providers and the external distiller.

A command runs under a supervisor (``gitkb.util.supervisor``, run as a script in a
session of its own), which contains the command and every process it starts, and
kills them all on a timeout or when the caller is interrupted. Should the supervisor
itself be killed, the caller kills what still carries the run's token in its
environment (``sweep``). Elsewhere than Linux only the command's process group is
reached.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

from gitkb.util import log, supervisor
from gitkb.util.supervisor import KILL_GRACE_S, TOKEN_VARIABLE, signal_all

__all__ = ["KILL_GRACE_S", "Outcome", "OutputCap", "run", "sweep"]


# --------------------------------------------------------------------------- the caller's half


class Outcome:
    """What running one command came to."""

    __slots__ = (
        "argv",
        "error",
        "returncode",
        "seconds",
        "stderr",
        "stdout",
        "strays",
        "timed_out",
    )

    def __init__(
        self,
        argv: list[str],
        returncode: int | None,
        timed_out: bool,
        seconds: float,
        strays: int = 0,
        error: str | None = None,
    ) -> None:
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
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    stdin: str | os.PathLike[str] | bytes | None = None,
    output: str | os.PathLike[str] | None = None,
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
    token = secrets.token_hex(8)
    command = shlex.join(str(arg) for arg in argv)
    log.logger(__name__).debug("running %s (timeout %ss)", command, timeout_s)
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
        supervised = [
            sys.executable, "-I", "-S", os.path.abspath(supervisor.__file__),
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
                    supervised,
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

    def __init__(self, path: str | os.PathLike[str] | None, cap: OutputCap) -> None:
        self._fh = open(path, "wb")
        self._cap = cap
        self._written = 0  # bytes of the head written
        self._total = 0
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def drain(self, pipe: IO[bytes]) -> None:
        """Read ``pipe`` on a thread until every writer has closed it."""
        self._reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._reader.start()

    def _read(self, pipe: IO[bytes]) -> None:
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

    def __init__(self, path: str | os.PathLike[str] | None, mode: str) -> None:
        self.fh = open(path, mode) if path is not None else None

    def __enter__(self) -> IO[Any] | None:
        return self.fh

    def __exit__(self, *exc: object) -> None:
        if self.fh is not None:
            self.fh.close()


def _await(process: subprocess.Popen[bytes], backstop_s: float, grace_s: float, token: str) -> None:
    """Wait for the supervisor; on an interrupt, let it clean up first, then re-raise."""
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


def _wait_exit(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """``process.wait(timeout)`` without its polling sleeps (up to 50 ms each): a pidfd
    becomes readable the moment the process exits (Linux 5.3+)."""
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
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _read(path: str | os.PathLike[str] | None) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except (OSError, TypeError):
        return b""


def _read_status(
    path: str, argv: list[str], seconds: float, supervisor_code: int | None
) -> Outcome:
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
    signal_all(found, signal.SIGKILL)
    return len(found)
