"""The project's own checks, run through the pre-commit framework as a contributor's commit
runs them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT


def commit_msg_check(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    # A repository of its own, so a contributor's unstaged edits to the config don't matter.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(ROOT / ".pre-commit-config.yaml", tmp_path / ".pre-commit-config.yaml")
    subprocess.run(["git", "-C", str(tmp_path), "add", ".pre-commit-config.yaml"], check=True)
    (tmp_path / "MSG").write_text(message)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--hook-stage", "commit-msg",
         "--commit-msg-filename", "MSG", "commit-subject"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("subject", "passes"),
    [("s" * 72, True), ("s" * 73, False), ("short\n\n" + "a long body line " * 10, True)],
)
def test_a_commit_subject_is_at_most_72_characters(
    tmp_path: Path, subject: str, passes: bool
) -> None:
    done = commit_msg_check(tmp_path, subject + "\n")
    assert (done.returncode == 0) is passes, done.stdout + done.stderr
