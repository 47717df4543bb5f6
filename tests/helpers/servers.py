"""Git servers on 127.0.0.1 for the push tests: git daemon, and git http-backend behind
lighttpd (smart HTTP); each runs until the block ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

DAEMON_START_S = 10


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(command: list[str], port: int, url: str):
    """Run a server process until it answers on ``port``; yield ``url``; stop it."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + DAEMON_START_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{command[0]} did not start: {process.stderr.read().decode()}")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def git_daemon(base: Path):
    port = free_port()
    command = ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
               "--enable=receive-pack", f"--port={port}", "--listen=127.0.0.1",
               str(base)]  # fmt: skip
    return serving(command, port, f"git://127.0.0.1:{port}")


HTTP_BACKEND = Path("/usr/lib/git-core/git-http-backend")


def smart_http(base: Path, tmp_path: Path):
    """``git http-backend`` behind Debian's lighttpd on 127.0.0.1, serving the bare
    repositories under ``base`` (receive-pack on); skips where either is missing."""
    lighttpd = shutil.which("lighttpd") or next(
        (p for p in ("/usr/sbin/lighttpd",) if Path(p).exists()), None
    )
    if lighttpd is None or not HTTP_BACKEND.exists():
        pytest.skip("lighttpd or git http-backend is not installed")
    port = free_port()
    env = {"GIT_PROJECT_ROOT": str(base), "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": "tester",
           "PATH": os.environ["PATH"], "HOME": os.environ["HOME"],
           "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    environment = ", ".join(f'"{k}" => "{v}"' for k, v in env.items())
    conf = tmp_path / "lighttpd.conf"
    conf.write_text(
        f'server.document-root = "{base}"\n'
        f"server.port = {port}\n"
        'server.bind = "127.0.0.1"\n'
        'server.modules = ("mod_alias", "mod_cgi", "mod_setenv")\n'
        f'server.errorlog = "{tmp_path / "lighttpd.log"}"\n'
        f'alias.url = ("/git" => "{HTTP_BACKEND}")\n'
        '$HTTP["url"] =~ "^/git" {\n'
        '  cgi.assign = ("" => "")\n'
        f"  setenv.add-environment = ({environment})\n"
        "}\n"
    )
    return serving([lighttpd, "-D", "-f", str(conf)], port, f"http://127.0.0.1:{port}/git")
