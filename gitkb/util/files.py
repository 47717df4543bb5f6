"""Files written so that a reader sees the old bytes or the new ones, never a part."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, data: bytes, tmp_dir: Path | None = None) -> None:
    """Write a file so that readers see the old or the new bytes, never a part.

    ``tmp_dir`` (same file system) keeps the partial file out of the target folder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if tmp_dir is not None:
        tmp_dir.mkdir(exist_ok=True)
    tmp = (tmp_dir or path.parent) / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
