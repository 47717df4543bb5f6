"""Repositories damaged the ways a test needs."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import zlib
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


def forge_cache_row(db: sqlite3.Connection, path: str, raw: bytes) -> None:
    """Write into an index cache (its open database ``db``) the rows the cache itself would
    keep for ``raw`` at ``path``, consistent with each other, whatever main holds."""
    from gitkb.store.cache.rows import (
        ENTRY_AT,
        KERNEL_COLUMNS,
        RECORD_COLUMNS,
        RECORD_WIDTH,
        kernel_entries,
        row_values,
    )
    from gitkb.vcs.plain import blob_id

    values, kernels, arches = row_values(path, blob_id(raw), raw)
    db.execute("INSERT INTO files VALUES (?, ?, ?)", (path, blob_id(raw), zlib.compress(raw)))
    marks = ", ".join("?" * RECORD_WIDTH)
    kept = values[:ENTRY_AT] + values[ENTRY_AT + 1 :]
    db.execute(f"INSERT INTO records ({RECORD_COLUMNS}) VALUES ({marks})", kept)
    db.execute("INSERT INTO entries VALUES (?, ?)", (path, values[ENTRY_AT]))
    columns = ", ".join(("name", *KERNEL_COLUMNS))
    marks = ", ".join("?" * (1 + len(KERNEL_COLUMNS)))
    db.executemany(
        f"INSERT INTO kernels ({columns}) VALUES ({marks})", kernel_entries(values, kernels)
    )
    db.executemany("INSERT INTO arches VALUES (?, ?)", [(a, path) for a in arches])
