"""The harness worker: one fresh subprocess per evaluation, cleaned up whatever it does.

The harness runs in ``harness_runner.py`` under the current interpreter, in its
own process group (so a child it forks is reached too), with the target's
environment applied. The request goes in on stdin; the response comes back
through a file, so a harness that prints or leaves a child holding a pipe open
cannot block the optimizer. On timeout the whole group gets SIGTERM, then
SIGKILL after a grace period; after a normal exit the group is killed anyway.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RUNNER = Path(__file__).with_name("harness_runner.py")
KILL_GRACE_S = 2.0


@dataclass
class Evaluation:
    """What one harness run produced: the runner's response, or why there is none."""

    response: dict | None
    returncode: int | None
    timed_out: bool
    seconds: float
    log: Path

    @property
    def error(self) -> str | None:
        if self.timed_out:
            return f"harness timed out after {self.seconds:.1f} s (process group killed)"
        if self.response is None:
            tail = _tail(self.log)
            return f"harness process exited with status {self.returncode} and no response" + (
                f": {tail}" if tail else ""
            )
        return None


def _tail(path: Path, limit: int = 600) -> str:
    try:
        text = path.read_bytes()[-limit:].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return text.replace("\n", " | ")


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def run_harness(
    harness: Path,
    source: str,
    target: dict,
    cases: list[dict],
    repetitions: int,
    workdir: Path,
    timeout_s: float,
    environment: dict[str, str] | None = None,
    profile: dict | None = None,
) -> Evaluation:
    """Evaluate ``source`` once: build, then verify/benchmark/profile each case."""
    workdir.mkdir(parents=True, exist_ok=True)
    response_path = workdir / "response.json"
    response_path.unlink(missing_ok=True)
    request = {
        "harness": str(Path(harness).resolve()),
        "source": source,
        "target": target,
        "cases": cases,
        "repetitions": repetitions,
        "profile": profile,
        "response": str(response_path.resolve()),
    }
    request_path = workdir / "request.json"
    request_path.write_text(json.dumps(request), encoding="utf-8")
    log_path = workdir / "harness.log"
    env = dict(os.environ, **(environment or {}))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.perf_counter()
    with open(request_path, "rb") as stdin, open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(RUNNER)],
            stdin=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=env,
            start_new_session=True,
        )
    timed_out = False
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < deadline:
            process.poll()
            if not _group_alive(process.pid):
                break
            time.sleep(0.02)
    finally:
        # Whatever the harness left behind in its group goes with it.
        _kill_group(process.pid, signal.SIGKILL)
        process.wait()
    seconds = time.perf_counter() - start
    response = None
    if not timed_out and response_path.exists():
        try:
            response = json.loads(response_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            response = None
    return Evaluation(response, process.returncode, timed_out, seconds, log_path)
