"""The one subprocess runner (gitkb.util.runner): timeouts, TERM then KILL, and every descendant
gone, including those that setsid or double-fork. Each test reads the process table."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest
from helpers import live_with

from gitkb.util import runner

pytestmark = [
    pytest.mark.slow,  # every test here takes seconds (pyproject: markers)
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="subtree containment walks /proc (Linux)"
    ),
]

# A process that ignores SIGTERM: only SIGKILL ends it.
STUBBORN = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
)


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def test_exit_status_output_and_missing_command(tmp_path):
    done = runner.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=10, capture=True)
    assert done.returncode == 3 and not done.ok and not done.timed_out
    assert done.stdout == b"out\n" and done.stderr == b"err\n"
    assert done.describe() == "exited with status 3"
    log = tmp_path / "log"
    assert runner.run(["sh", "-c", "echo both; echo two >&2"], timeout_s=10, output=log).ok
    assert log.read_bytes() == b"both\ntwo\n"
    fed = runner.run(["cat"], timeout_s=10, stdin=b"fed\xff", capture=True)
    assert fed.stdout == b"fed\xff"
    missing = runner.run(["no-such-command-for-gitkb"], timeout_s=10)
    assert missing.error and "no-such-command-for-gitkb" in missing.describe()


def test_segfault_is_reported_by_its_signal():
    done = runner.run(
        python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), timeout_s=10
    )
    assert done.returncode == -signal.SIGSEGV and done.describe() == "killed by SIGSEGV"


def test_hang_is_killed_at_the_timeout(marker):
    start = time.monotonic()
    done = runner.run(python("import time; time.sleep(120)", marker), timeout_s=0.5, grace_s=0.5)
    assert done.timed_out and "timed out" in done.describe()
    assert time.monotonic() - start < 5
    assert live_with(marker) == []


def test_hang_ignoring_term_gets_kill_after_the_grace(marker):
    start = time.monotonic()
    done = runner.run(python(STUBBORN, marker), timeout_s=0.5, grace_s=0.5)
    elapsed = time.monotonic() - start
    assert done.timed_out and 1.0 <= elapsed < 5
    assert live_with(marker) == []


@pytest.mark.parametrize(
    "escape",
    [
        # a plain child left running
        "subprocess.Popen([sys.executable, '-c', STUBBORN, MARKER])",
        # a child in a session (and process group) of its own
        "subprocess.Popen([sys.executable, '-c', STUBBORN, MARKER], start_new_session=True)",
        # a double fork with setsid: the grandchild is an orphan in its own session
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execv(sys.executable, [sys.executable, '-c', STUBBORN, MARKER])\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)",
    ],
    ids=["fork", "setsid", "double-fork"],
)
@pytest.mark.parametrize("ending", ["exits", "hangs"])
def test_every_descendant_dies_with_the_command(marker, escape, ending):
    code = (
        f"import os, subprocess, sys, time\nSTUBBORN = {STUBBORN!r}\nMARKER = {marker!r}\n"
        f"{escape}\ntime.sleep(0.3)\n" + ("time.sleep(120)\n" if ending == "hangs" else "")
    )
    done = runner.run(python(code), timeout_s=1.0 if ending == "hangs" else 10.0, grace_s=0.3)
    assert done.timed_out == (ending == "hangs")
    if ending == "exits":
        assert done.returncode == 0 and done.strays == 1
    assert live_with(marker) == []


def test_an_interrupted_caller_takes_the_tree_down(marker):
    """KeyboardInterrupt in the caller: the supervisor cleans up before it propagates."""
    # Python's own handler, even where pytest was started with SIGINT ignored (a
    # background job of a shell): else the signal would never reach the caller.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {STUBBORN!r}, {marker!r}], "
        "start_new_session=True)\ntime.sleep(120)\n"
    )
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run(python(code), timeout_s=60, grace_s=0.3)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert live_with(marker) == []


def test_a_killed_supervisor_is_backed_by_the_token_sweep(marker):
    """Should the supervisor itself die (a command that kills its parent), the caller
    kills what still carries the run's token."""
    code = (
        "import os, signal, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {STUBBORN!r}, {marker!r}], "
        "start_new_session=True)\ntime.sleep(0.3)\n"
        "os.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(120)\n"
    )
    done = runner.run(python(code), timeout_s=30, grace_s=0.3)
    assert done.error and "supervisor" in done.error
    deadline = time.monotonic() + 3
    while live_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_with(marker) == []


def test_the_external_distiller_runs_contained(tmp_path, marker, monkeypatch):
    """mine's --distiller goes through the same runner: its daemon dies with it."""
    from gitkb.mine.distill import external as distill

    script = tmp_path / "distiller.py"
    script.write_text(
        "import os, subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {STUBBORN!r}, {marker!r}], "
        "start_new_session=True)\n"
        "open(os.path.join(os.environ['GITKB_OUT'], 'report.json'), 'w').write("
        '\'{"skipped": "nothing to say"}\')\n'
    )

    class Packet:
        seg_id = "seg-1"

        def as_json(self):
            return {"seg_id": self.seg_id}

    result = distill.run_external(f"{sys.executable} {script}", Packet())
    assert result.record is None and result.skipped == "nothing to say"
    assert live_with(marker) == []
    monkeypatch.setattr(distill, "EXTERNAL_TIMEOUT_S", 0.5)
    script.write_text("import time\ntime.sleep(120)\n")
    start = time.monotonic()
    result = distill.run_external(f"{sys.executable} {script} {marker}", Packet())
    assert result.skipped == "the distiller timed out" and time.monotonic() - start < 6
    assert live_with(marker) == []


def test_capped_output_never_holds_more_than_the_cap_while_the_command_writes(tmp_path):
    log = tmp_path / "log"
    # The command prints 4 MiB, then reports how big the log file is while it still runs.
    loud = (
        "import os, sys, time\n"
        "for n in range(64): sys.stdout.write(str(n % 10) * (64 << 10)); sys.stdout.flush()\n"
        "time.sleep(0.5)\n"
        "print(f'\\nsize while running: {os.path.getsize(sys.argv[1])}'); print('THE END')\n"
    )
    cap = runner.OutputCap(head=128 << 10, tail=8 << 10, what="test output")
    done = runner.run(python(loud, str(log)), timeout_s=60, output=log, output_cap=cap)
    assert done.ok
    kept = log.read_bytes()
    assert len(kept) <= cap.head + cap.tail + 200
    assert kept.startswith(b"0" * (64 << 10) + b"1" * (64 << 10))
    assert b"[gitkb] test output truncated: " in kept and kept.rstrip().endswith(b"THE END")
    seen = int(kept.split(b"size while running: ")[1].split()[0])
    assert seen <= cap.head  # the file never went past the head
    small = runner.run(["sh", "-c", "echo both; echo two >&2"], timeout_s=10, output=log,
                       output_cap=cap)  # fmt: skip
    assert small.ok and log.read_bytes() == b"both\ntwo\n"
