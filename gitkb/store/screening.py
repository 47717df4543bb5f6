"""Screening a large batch of incoming records in a worker process, ahead of the writer.

Parsing a record and running the gates that read nothing but the record (``Gate.alone``)
is most of an admission's work, and nothing the writer does changes its outcome. So for a
batch of ``MIN_BATCH`` records or more, on a machine with a core idle, a forked worker
parses and gates record after record while the writer, on the other core, gates the one
it is at against the store, commits it and keeps the cache. The worker sends each record
back as it parsed it, with its gates' verdicts and its bytes worked out as an insert
writes them (blob id, zlib stream, cache row), in order; the writer judges and writes
exactly as it would have.

The worker never decides anything: a record it cannot parse, or any surprise in it (an
exception, a crash), makes it stop, and the writer screens that record and the rest
itself, so the error a user sees, and every admission, is the one the plain path gives.
"""

from __future__ import annotations

import contextlib
import fcntl
import marshal
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.gates import Finding, Gate, GateContext, GateResult
from gitkb.gates.registry import record_level
from gitkb.gates.sharded import workers
from gitkb.store.cache.rows import RowValues, row_values
from gitkb.store.request import AdmitRequest, parse
from gitkb.store.writer import Prepared
from gitkb.vcs.objects.pack_writer import deflate
from gitkb.vcs.plain import blob_id

# Below this many records the fork and the first chunk's wait cost more than they save.
MIN_BATCH = 64
# Records per message from the worker: the writer waits for the first chunk only.
_CHUNK = 16
_PIPE_BYTES = 1 << 20  # Linux's default limit for an unprivileged process

# One record as the worker sends it: the record, its path, per alone gate its name,
# status, reason and findings, and its bytes as an insert writes them (blob id, zlib
# stream, cache row), in types ``marshal`` writes (it reads them back at twice pickle's
# speed; a GateResult also names its Gate, which holds closures).
_Verdict = tuple[str, str, str, list[tuple[str, str, str, str]]]
_Sent = tuple[dict, str, list[_Verdict], tuple[str, bytes, RowValues]]


@dataclass(frozen=True)
class Screened:
    """One request's record as parsed, its path, the verdicts already reached on it (gate
    name -> result) and its bytes worked out as an insert writes them; the last two empty
    when the writer screened it (it then runs every gate and works the rest out itself)."""

    record: dict
    path: str
    verdicts: dict[str, GateResult]
    prepared: Prepared | None = None


class Screening:
    """The records of one batch, screened by a forked worker when the batch is large
    enough and the process may fork; otherwise (and after the worker stopped) by the
    caller, one record when asked for."""

    def __init__(self, requests: list[AdmitRequest], max_bytes: int) -> None:
        self._requests = requests
        self._max_bytes = max_bytes
        self._done: list[Screened] = []
        self._gates: dict[str, Gate] = {}
        self._reader: IO[bytes] | None = None
        self._pid: int | None = None
        if len(requests) >= MIN_BATCH and _may_fork():
            self._start()

    @property
    def working(self) -> bool:
        """Whether a worker screens this batch."""
        return self._pid is not None

    def screener(self, n: int) -> Callable[[], Screened]:
        """Request ``n``'s screening, for its builder to ask for under the writer lock."""
        return lambda: self.screened(n)

    def screened(self, n: int) -> Screened:
        """Request ``n`` screened: the worker's answer, else parsed here (RecordError)."""
        while n >= len(self._done) and self._reader is not None:
            self._receive()
        if n < len(self._done):
            return self._done[n]
        record, path = parse(self._requests[n], self._max_bytes)
        return Screened(record, path, {})

    def close(self) -> None:
        """Stop the worker (if still running) and reap it."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None

    def __enter__(self) -> Screening:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> None:
        gates = [g for g in record_level() if g.alone]
        self._gates = {g.name: g for g in gates}
        read_end, write_end = os.pipe()
        _widen(write_end)
        pid = os.fork()
        if pid == 0:  # the worker: screen, send, and leave without running any cleanup
            try:
                os.close(read_end)
                with open(write_end, "wb") as out:
                    _serve(out, self._requests, self._max_bytes, gates)
            finally:
                os._exit(0)
        os.close(write_end)
        self._pid = pid
        self._reader = open(read_end, "rb")  # noqa: SIM115 (closed by close())

    def _receive(self) -> None:
        """One chunk from the worker; at its end (or a broken message) the worker is done."""
        assert self._reader is not None
        try:
            size = int.from_bytes(self._reader.read(8), "big")
            sent: list[_Sent] = marshal.loads(self._reader.read(size)) if size else []
        except Exception:  # the end (EOF), or a torn message: screen the rest here
            sent = []
        if not sent:
            self.close()
            return
        for record, path, verdicts, prepared in sent:
            results = {
                name: GateResult(self._gates[name], status, reason, [Finding(*f) for f in found])
                for name, status, reason, found in verdicts
            }
            self._done.append(Screened(record, path, results, Prepared(*prepared)))


def _widen(pipe: int) -> None:
    """Let the worker run several chunks ahead (Linux; a pipe holds 64 KiB, under one chunk,
    by default), so that a moment it is kept off the CPU costs the writer no wait."""
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _may_fork() -> bool:
    """An idle core to work on, and one thread to copy (a fork copies only the caller's):
    a process running other threads screens its records itself."""
    return _idle_core() and _threads() == 1


def _threads() -> int:
    """The threads this process runs: the kernel's count where it gives one (a thread a
    library started without ``threading``, as pytest-xdist's does, counts too), else
    ``threading``'s."""
    with contextlib.suppress(OSError):
        return len(os.listdir("/proc/self/task"))
    threading = sys.modules.get("threading")
    return 1 if threading is None else threading.active_count()


def _idle_core() -> bool:
    """Whether a core is free for a worker. Shipping records to a worker and back costs
    about a fifth more work in all: where every core was busy over the last minute (a load
    this process's own start and disk waits count in too), the writer alone finishes
    sooner."""
    cores = workers()  # 1 where there is no fork
    if cores < 2:
        return False
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load figure here: assume the cores are there
        return True
    return load < cores


def _serve(out: IO[bytes], requests: list[AdmitRequest], max_bytes: int, gates: list[Gate]) -> None:
    """The worker: each request parsed and judged by ``gates``, sent ``_CHUNK`` at a time,
    up to the first record that does not parse (the writer parses it again and says why)."""
    sent: list[_Sent] = []
    for request in requests:
        try:
            record, path = parse(request, max_bytes)
        except GitkbError:
            break
        ctx = GateContext(
            records=[rec.RecordFile(path, request.raw, record)], admission=request.action
        )
        results = [(g, g.run(ctx)) for g in gates]
        blob = blob_id(request.raw)
        prepared = (blob, deflate(request.raw), row_values(path, blob, request.raw, record))
        sent.append((record, path, [(g.name, *_verdict(r)) for g, r in results], prepared))
        if len(sent) == _CHUNK:
            _send(out, sent)
            sent = []
    if sent:
        _send(out, sent)


def _verdict(result: GateResult) -> tuple[str, str, list[tuple[str, str, str, str]]]:
    found = [(f.record_id, f.gate, f.message, f.field) for f in result.findings]
    return result.status, result.reason, found


def _send(out: IO[bytes], sent: list[_Sent]) -> None:
    try:
        data = marshal.dumps(sent)  # one read for the writer: marshal.load reads by the item
        out.write(len(data).to_bytes(8, "big") + data)
        out.flush()
    except BrokenPipeError:  # the writer is done with us (or gone)
        os._exit(0)
