"""Shared test fixtures: real repositories in tmp_path, C git and the real CLI in subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "gpu-wiki-sample"
EXAMPLES = ROOT / "templates" / "examples"


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory, monkeypatch):
    """C git and gitkb see a private HOME and a fixed identity, never the user's config."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.invalid")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    for name in (
        "GIT_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GITKB_STORE",
    ):
        monkeypatch.delenv(name, raising=False)
    subprocess.run(["git", "config", "--global", "init.defaultBranch", "main"], check=True)


def git(*args: str, cwd: Path | str | None = None, check: bool = True, input: str | None = None):
    """Run C git; return the completed process (text mode)."""
    return subprocess.run(
        ["git", *args], cwd=cwd, check=check, capture_output=True, text=True, input=input
    )


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


def example_files() -> list[Path]:
    return sorted((EXAMPLES / "records").rglob("*.json"))


def needs_conformance():
    if not CONFORMANCE.is_dir():
        pytest.skip("../shared/conformance is not present")
    return CONFORMANCE


@pytest.fixture
def store(tmp_path):
    from gitkb.store import Store

    return Store.init(tmp_path / "store")


@pytest.fixture
def bare_store(tmp_path):
    from gitkb.store import Store

    return Store.init(tmp_path / "store.git", bare=True)


def live_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds ``marker``: the process table
    as a containment test reads it."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found


@pytest.fixture
def marker():
    """A unique word for the command lines of the processes a test starts; whatever still
    carries it afterwards is killed, so a failing test leaves nothing behind."""
    tag = f"gitkb-test-{uuid.uuid4().hex}"
    yield tag
    for pid in live_with(tag):
        os.kill(pid, signal.SIGKILL)


def lose_object(repo: Path, sha: str) -> None:
    """Damage the repository at ``repo`` (a work tree or a bare one) as a lost object does:
    every object repacked into one pack, then that pack rewritten without ``sha``, and the
    store's index cache removed so a reader has to go back to the damaged objects."""
    import shutil
    import tempfile

    git_dir = repo / ".git" if (repo / ".git").is_dir() else repo
    git("repack", "-a", "-d", "-q", cwd=repo)
    listed = git("rev-list", "--objects", "--all", cwd=repo).stdout.splitlines()
    keep = [line.split()[0] for line in listed if line.split()[0] != sha]
    packs = git_dir / "objects" / "pack"
    with tempfile.TemporaryDirectory() as scratch:
        git("pack-objects", "-q", f"{scratch}/pack", cwd=repo, input="\n".join(keep) + "\n")
        for pack in packs.glob("pack-*"):
            pack.unlink()
        for pack in Path(scratch).iterdir():
            shutil.move(pack, packs / pack.name)
    assert git("cat-file", "-e", sha, cwd=repo, check=False).returncode != 0
    shutil.rmtree(git_dir / "gitkb-cache", ignore_errors=True)
