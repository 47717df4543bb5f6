"""A bulk admission's worker (``gitkb.store.screening``): the gates it runs judge a record
alone, and a store admitted through it is the store the plain path writes, byte for
byte, refusals and bad files stopping the run at the same record with the same words."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time

import pytest
from helpers import ROOT, git, kb, live_with

from gitkb.gates import GateContext, run_gates
from gitkb.gates.registry import by_name, record_level
from gitkb.record import dumps, path_for
from gitkb.store import Store, screening
from gitkb.store.gating import gate_context
from gitkb.store.request import AdmitRequest
from gitkb.testing import synthetic
from gitkb.testing.injections import example_context

BATCH = screening.MIN_BATCH + 16


class Tripwire:
    """A store no gate judging a record alone may look at."""

    def __getattr__(self, name: str):
        raise AssertionError(f"an alone gate read the store's {name}")


def _contexts() -> list[GateContext]:
    """The valid sample, then each injection case of every alone gate applied to it."""
    contexts = [example_context()]
    for gate in record_level():
        for case in gate.injections if gate.alone else ():
            ctx = copy.deepcopy(contexts[0])
            if case.mutate(ctx):
                contexts.append(ctx)
    return contexts


@pytest.mark.slow
def test_alone_gates_judge_the_same_without_the_store_or_the_action():
    alone = [g for g in record_level() if g.alone]
    assert {"schema", "anonymization", "raw-isolation", "no-cross-reference"} <= {
        g.name for g in alone
    }
    fired = 0
    for ctx in _contexts():
        for gate in alone:
            seen = []
            for store, action in ((None, None), (Tripwire(), "insert"), (Tripwire(), "confirm")):
                judged = copy.deepcopy(ctx)
                judged.store, judged.admission = store, action
                result = gate.run(judged)
                seen.append((result.status, result.reason, result.findings))
            assert seen[0] == seen[1] == seen[2], gate.name
            fired += bool(seen[0][2])
    assert fired >= len(alone)  # the cases do make the gates speak


def _files(folder, records: list[dict]) -> list[str]:
    folder.mkdir()
    paths = []
    for n, record in enumerate(records):
        path = folder / f"{n:03d}.json"
        path.write_bytes(dumps(record))
        paths.append(str(path))
    return paths


# `git kb admit` in a process of its own (one thread: pytest-xdist's workers run two, and
# a process running threads never forks), through the worker whatever the machine's load
# ("worker", which says so on stderr when it starts one), or by the plain path ("plain").
_ADMIT = """
import sys
from gitkb.store import screening
if sys.argv[1] == "plain":
    screening.MIN_BATCH = 10**9
else:
    screening._idle_core = lambda: True
    start = screening.Screening._start

    def started(self):
        start(self)
        print(STARTED, file=sys.stderr)

    screening.Screening._start = started
from gitkb.cli import main
sys.argv = ["git-kb", "admit", *sys.argv[2:]]
main()
"""
STARTED = "the screening worker started"


def _admit(location, files: list[str], worker: bool) -> tuple[int, list[str], str]:
    """``files`` admitted into ``location`` through a worker or by the plain path: the
    exit code, the admissions printed and what stderr says besides."""
    script = _ADMIT.replace("STARTED", repr(STARTED))
    argv = [sys.executable, "-c", script, "worker" if worker else "plain", *files]
    done = subprocess.run([*argv, "--store", str(location)], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip
    lines = done.stderr.splitlines()
    assert (STARTED in lines) == worker, done.stderr
    error = "\n".join(line for line in lines if line != STARTED)
    # each admission as printed, less its commit (two runs' dates may differ by a second)
    admitted = [line.rsplit(" [", 1)[0] for line in done.stdout.splitlines()]
    return done.returncode, admitted, error


def _history(location) -> list[str]:
    """Each commit of main as its tree id and message (the dates differ run to run)."""
    return git("log", "--format=%T%n%B%x00", "main", cwd=location).stdout.split("\0")


@pytest.mark.slow
def test_a_bulk_admission_writes_the_trees_the_plain_path_and_c_git_write(tmp_path):
    records = [synthetic.strategy(n) for n in range(BATCH)]
    files = _files(tmp_path / "in", records)
    worked, plain, cli = (
        Store.init(tmp_path / name, bare=True, name="kb") for name in ("a.git", "b.git", "c.git")
    )
    assert _admit(worked.location, files, worker=True)[0] == 0
    assert _admit(plain.location, files, worker=False)[0] == 0
    done = kb("admit", *files, "--store", str(cli.location))  # whichever path the load picks
    assert done.returncode == 0, done.stderr.decode()
    assert len(done.stdout.splitlines()) == BATCH
    assert _history(worked.location) == _history(plain.location) == _history(cli.location)
    # the cache rows the worker worked out are the ones the writer works out, and agree
    # with a fresh rebuild
    worked_rows, plain_rows = (Store.open(s.location).cache.rows() for s in (worked, plain))
    assert len(worked_rows) == BATCH and worked_rows == plain_rows
    index = run_gates(gate_context(Store.open(worked.location), full=True), by_name(["index"]))
    assert [r.status for r in index] == ["PASS"], [f.line() for r in index for f in r.findings]

    # C git, from the same files: the store's first tree plus each file at its path
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp_path / "index"))

    def c_git(*args: str, data: bytes | None = None) -> str:
        done = subprocess.run(["git", *args], cwd=worked.location, env=env, input=data,
                              capture_output=True, check=True)  # fmt: skip
        return done.stdout.decode().strip()

    first = c_git("rev-list", "--max-parents=0", "main")
    c_git("read-tree", first)
    for record, path in zip(records, files, strict=True):
        blob = c_git("hash-object", "-w", "--stdin", data=open(path, "rb").read())
        c_git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path_for(record)}")
    assert c_git("write-tree") == c_git("rev-parse", "main^{tree}")
    fsck = git("fsck", "--strict", cwd=worked.location, check=False)
    assert fsck.returncode == 0, fsck.stderr
    validated = kb("validate", "--history", str(worked.location))
    assert validated.returncode == 0, validated.stdout.decode() + validated.stderr.decode()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["leak", "bad-json", "taken-id"])
def test_a_bulk_admission_stops_where_the_plain_path_stops(tmp_path, damage):
    records = [synthetic.strategy(n) for n in range(BATCH)]
    stop = screening.MIN_BATCH - 7  # well inside the worker's share, past its first chunk
    files = _files(tmp_path / "in", records)
    if damage == "leak":
        records[stop]["payload"]["mechanism"] += " Questions to jane.doe@example.com."
        (tmp_path / "in" / f"{stop:03d}.json").write_bytes(dumps(records[stop]))
    elif damage == "bad-json":
        (tmp_path / "in" / f"{stop:03d}.json").write_text('{"id": "x", "id": "y"}')
    else:
        taken = json.loads(dumps(records[stop]))
        (tmp_path / "in" / f"{stop:03d}.json").write_bytes(dumps(records[3] | {"id": taken["id"]}))
        (tmp_path / "in" / "003.json").write_bytes(dumps(records[stop]))
    worked, plain = (
        Store.init(tmp_path / name, bare=True, name="kb") for name in ("a.git", "b.git")
    )
    stopped = _admit(worked.location, files, worker=True)
    refusal = _admit(plain.location, files, worker=False)
    assert refusal[0] != 0 and refusal[2].startswith("gitkb: error:"), refusal
    # the same exit code, the same admissions printed (each its action, id and path) and
    # the same error line
    assert stopped == refusal
    assert len(refusal[1]) == stop
    assert _history(worked.location) == _history(plain.location)


# A batch screened in a process of one thread (pytest-xdist's workers run two): the
# first record from the worker, then the worker gone, the last one screened here.
_WORKER_LEFT = """
import json
from gitkb.record import dumps
from gitkb.store import screening
from gitkb.store.request import AdmitRequest
from gitkb.testing import synthetic
screening._idle_core = lambda: True
batch = screening.MIN_BATCH + 16
requests = [AdmitRequest(dumps(synthetic.strategy(n)), source=f"r{n}") for n in range(batch)]
with screening.Screening(requests, 1 << 20) as screened:
    working = screened.working
    first = screened.screened(0)
    screened.close()  # as if the worker had died here
    last = screened.screened(batch - 1)
print(json.dumps({"working": working, "first": {n: v.status for n, v in first.verdicts.items()},
                  "last": {n: v.status for n, v in last.verdicts.items()},
                  "record": last.record, "path": last.path}))
"""


def test_the_writer_screens_what_the_worker_left():
    done = subprocess.run([sys.executable, "-c", _WORKER_LEFT], capture_output=True, text=True,
                          check=True, cwd=ROOT)  # fmt: skip
    got = json.loads(done.stdout)
    assert got["working"], "a process of one thread on an idle core forks a worker"
    assert set(got["first"]) == {g.name for g in record_level() if g.alone}
    assert set(got["first"].values()) == {"PASS"}
    assert got["last"] == {}  # the writer runs every gate on it itself
    assert got["record"] == synthetic.strategy(BATCH - 1)
    assert got["path"] == path_for(got["record"])


def test_a_process_running_another_thread_screens_its_records_itself(monkeypatch):
    """Even a thread ``threading`` does not know of (started by ``_thread``, or by C)."""
    import _thread

    monkeypatch.setattr(screening, "_idle_core", lambda: True)
    stop = _thread.allocate_lock()
    stop.acquire()
    _thread.start_new_thread(stop.acquire, ())
    try:
        requests = [AdmitRequest(dumps(synthetic.strategy(n))) for n in range(BATCH)]
        with screening.Screening(requests, 1 << 20) as screened:
            assert not screened.working
            assert screened.screened(0).verdicts == {}
    finally:
        stop.release()


# A `git kb admit` that uses the worker whatever the machine's load.
_ADMIT_WITH_WORKER = """
import sys
from gitkb.store import screening
screening._idle_core = lambda: True
from gitkb.cli import main
sys.argv = ["git-kb", "admit", *sys.argv[2:]]
main()
"""


@pytest.mark.slow
def test_a_killed_bulk_admission_leaves_whole_commits_and_no_worker(tmp_path, marker):
    store = Store.init(tmp_path / "kb.git", bare=True)
    records = [synthetic.strategy(n) for n in range(400)]
    pending = list(zip(_files(tmp_path / "in", records), [r["id"] for r in records], strict=True))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    orphaned = 0
    # Each kill comes this long after the worker starts: while it screens, then while
    # the writer commits what it screened (a worker is done within a second).
    for delay in (0.0, 0.05, 0.3, 0.8):
        files = [f for f, _ in pending]
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _ADMIT_WITH_WORKER,
                marker,
                *files,
                "--store",
                str(store.location),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        started = time.monotonic() + 10
        while len(live_with(marker)) < 2 and proc.poll() is None and time.monotonic() < started:
            time.sleep(0.005)
        time.sleep(delay)
        orphaned += len(live_with(marker)) == 2  # the writer and its worker, at the kill
        proc.kill()
        _, err = proc.communicate()
        deadline = time.monotonic() + 10
        while live_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live_with(marker) == []  # an orphaned worker leaves on its own
        assert b"Traceback" not in err
        fsck = git("fsck", "--strict", "--no-dangling", cwd=store.location, check=False)
        assert fsck.returncode == 0, fsck.stderr
        reopened = Store.open(store.location)
        admitted = {h["trailers"]["KB-Record"] for h in reopened.log() if h["action"] == "insert"}
        assert set(reopened.view().ids()) == admitted
        pending = [(f, record_id) for f, record_id in pending if record_id not in admitted]
    assert orphaned >= 1
