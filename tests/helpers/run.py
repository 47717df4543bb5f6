"""C git and the real `git-kb` CLI, each in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT


def git(*args: str, cwd: Path | str | None = None, check: bool = True, input: str | None = None):
    """Run C git; return the completed process (text mode)."""
    return subprocess.run(
        ["git", *args], cwd=cwd, check=check, capture_output=True, text=True, input=input
    )


def unmeasured_env() -> dict[str, str]:
    """This environment without coverage's subprocess setting, for a test of what a fresh
    interpreter imports: coverage, started in it, would load modules of its own."""
    return {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}


def kb(
    *args: str, cwd: Path | str | None = None, env: dict | None = None, input: bytes | None = None
):
    """Run the real `git-kb` CLI in a subprocess; return the completed process (bytes)."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full_env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "gitkb", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        input=input,
    )


def write_git_kb(bin_dir: Path) -> Path:
    """``bin_dir/git-kb``, an executable that runs this checkout's gitkb: `git kb` finds it
    on PATH, as hooks and agents' clients call it."""
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "git-kb"
    wrapper.write_text(
        f'#!/bin/sh\nPYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{sys.executable}" -m gitkb "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def put_git_kb_on_path(tmp_path: Path, monkeypatch) -> Path:
    """A `git-kb` executable on PATH that runs this checkout's gitkb, as hooks call it."""
    bin_dir = write_git_kb(tmp_path / "bin").parent
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir
