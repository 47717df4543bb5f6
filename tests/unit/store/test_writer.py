"""Many writers and killed writers: no admission is lost or left half-done."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import pytest
from helpers import ROOT, git

from gitkb.gates import run_gates
from gitkb.gates.registry import by_name
from gitkb.record import dumps
from gitkb.store import Store
from gitkb.store.gating import gate_context
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def write_records(folder, numbers):
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in numbers:
        path = folder / f"r{n}.json"
        path.write_bytes(dumps(synthetic.strategy(n)))
        paths.append(str(path))
    return paths


def admit_process(store_dir, files, env=None):
    import os

    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "gitkb", "admit", *files, "--store", str(store_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
    )


def assert_consistent(store_dir):
    """The tip validates (its index cache agreeing with a fresh rebuild), C git's fsck is
    clean, and every record has its index entry and its admission commit (nothing
    half-admitted)."""
    store = Store.open(store_dir)
    results = run_gates(gate_context(store, full=True), by_name(["schema", "ids", "index"]))
    assert [r.status for r in results] == ["PASS", "PASS", "PASS"], [
        f.line() for r in results for f in r.findings
    ]
    fsck = git("fsck", "--strict", "--no-dangling", cwd=store_dir, check=False)
    assert fsck.returncode == 0 and "error" not in fsck.stderr, fsck.stderr
    on_disk = {f.id for f in store.record_files()}
    admitted = {h["trailers"]["KB-Record"] for h in store.log() if h["action"] == "insert"}
    assert on_disk == set(store.view().ids()) == admitted
    return on_disk


def test_eight_writers_lose_nothing(tmp_path):
    store_dir = tmp_path / "kb"
    Store.init(store_dir)
    procs = [
        admit_process(store_dir, write_records(tmp_path / f"w{w}", range(w * 25, w * 25 + 25)))
        for w in range(8)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()
    ids = assert_consistent(store_dir)
    assert len(ids) == 200
    assert git("rev-list", "--count", "main", cwd=store_dir).stdout.strip() == "201"
    assert git("status", "--porcelain", cwd=store_dir).stdout == ""


def test_sigkill_at_random_moments_leaves_complete_or_absent_admissions(tmp_path):
    rng = random.Random(20261129)
    store_dir = tmp_path / "kb"
    Store.init(store_dir)
    batch, runs = 150, 12
    files = write_records(tmp_path / "in", range(batch * (runs + 1) + 10))  # never exhausted
    recovered_messages = 0
    admitted: set[str] = set()
    ids = [synthetic.strategy(n)["id"] for n in range(batch * (runs + 1) + 10)]

    def remaining():
        return [f for f, record_id in zip(files, ids, strict=True) if record_id not in admitted]

    # How long one batch takes here, so the kills land across its whole run (start-up,
    # gating, packing, the ref move) and some runs finish, on a fast machine or a slow one.
    start = time.monotonic()
    calibration = admit_process(store_dir, remaining()[:batch])
    calibration.communicate(timeout=240)
    took = time.monotonic() - start
    admitted = assert_consistent(store_dir)
    for _ in range(runs):
        proc = admit_process(store_dir, remaining()[:batch])
        time.sleep(rng.uniform(0.3, 1.3) * took)
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        recovered_messages += "recovered the writer lock" in err.decode()
        assert "Traceback" not in err.decode()
        now = assert_consistent(store_dir)
        assert admitted <= now  # nothing that was admitted ever disappears
        admitted = now
    final = admit_process(store_dir, remaining()[:5])
    _, err = final.communicate(timeout=60)
    assert final.returncode == 0, err.decode()
    assert_consistent(store_dir)
    # the killed writers' leftovers are repaired: the work tree matches main
    assert git("status", "--porcelain", cwd=store_dir).stdout == ""
    assert recovered_messages >= 1 or "recovered the writer lock" in err.decode()
    assert batch + 30 <= len(admitted) < batch * (runs + 1)  # some runs were cut short
