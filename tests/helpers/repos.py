"""Repositories damaged the ways a test needs."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from helpers.run import git


def lose_object(repo: Path, sha: str) -> None:
    """Damage the repository at ``repo`` (a work tree or a bare one) as a lost object does:
    every object repacked into one pack, then that pack rewritten without ``sha``, and the
    store's index cache removed so a reader has to go back to the damaged objects."""
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
