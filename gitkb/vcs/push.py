"""``git push`` with C git: the server side (receive-pack and its pre-receive hook) is
the component being driven, so the client is git's own."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from gitkb.errors import GitkbError


@dataclass
class PushResult:
    """What ``git push`` said: ``accepted`` when every ref landed; ``output`` is git's own
    report (the server hook's lines come back prefixed ``remote:``)."""

    accepted: bool
    returncode: int
    output: str


def push(
    repo_path: str | os.PathLike,
    remote: str,
    refspecs: list[str],
    env: Mapping[str, str] | None = None,
) -> PushResult:
    """Push ``refspecs`` from the repository at ``repo_path`` to ``remote`` (a URL or path)
    with C git: the server side (receive-pack and its pre-receive hook) is the component
    being driven, so the client is git's own. ``env`` is the environment git and the
    server's hook run in (None: this process's). A refusal is a result, not an error."""
    if shutil.which("git") is None:
        raise GitkbError("pushing needs C git on PATH (git push)")
    done = subprocess.run(
        ["git", "push", "--porcelain", remote, *refspecs],
        cwd=repo_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(env) if env is not None else None,
    )
    return PushResult(done.returncode == 0, done.returncode, done.stdout + done.stderr)
