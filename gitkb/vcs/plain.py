"""Git facts read or computed without loading dulwich: a repository's git directory,
a ref's sha, a blob's id, the committer identity.

A reader whose answer the store's cache already holds for the commit ``main``
names (``git kb resolve``, ``git kb query``) needs only that commit's sha: the
loose ref file or ``packed-refs``, symbolic refs followed. Anything unusual (a
reftable repository, a ref that does not parse) answers None, and the caller
takes the full path through ``repository``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gitkb.digests import sha1

_SHA = re.compile(r"[0-9a-f]{40}")


def git_dir_of(path: str | os.PathLike) -> Path | None:
    """The git directory of a repository at ``path`` (a work tree or a bare repository),
    or None when ``path`` is neither."""
    path = Path(path)
    dot_git = path / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir: "):
            target = Path(text[len("gitdir: ") :])
            return target if target.is_absolute() else (path / target)
        return None
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path
    return None


def read_ref(git_dir: Path, ref: str, depth: int = 5) -> str | None:
    """The sha ``ref`` names in ``git_dir`` (loose, then packed), or None."""
    if depth == 0:
        return None
    common = git_dir
    pointer = git_dir / "commondir"
    if pointer.is_file():
        common = git_dir / pointer.read_text().strip()
    for base in (git_dir, common):
        try:
            text = (base / ref).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.startswith("ref: "):
            return read_ref(git_dir, text[5:].strip(), depth - 1)
        return text if _SHA.fullmatch(text) else None
    try:
        packed = (common / "packed-refs").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    suffix = " " + ref
    for line in packed.splitlines():
        if line.endswith(suffix) and _SHA.fullmatch(line[:40]):
            return line[:40]
    return None


def blob_id(data: bytes) -> str:
    """The sha git names ``data`` by as a blob."""
    return sha1(b"blob %d\0" % len(data) + data).hexdigest()


def identity() -> str:
    """The committer identity: GIT_COMMITTER_/GIT_AUTHOR_ variables, else a fixed one."""
    name = os.environ.get("GIT_COMMITTER_NAME") or os.environ.get("GIT_AUTHOR_NAME") or "gitkb"
    email = (
        os.environ.get("GIT_COMMITTER_EMAIL")
        or os.environ.get("GIT_AUTHOR_EMAIL")
        or "gitkb@localhost"
    )
    return f"{name} <{email}>"
