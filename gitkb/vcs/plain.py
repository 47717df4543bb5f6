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
from hashlib import sha1

_HEX = "0123456789abcdef"


def _is_sha(text: str) -> bool:
    """Whether ``text`` is 40 lowercase hex digits (no ``re``: every reader opens here)."""
    return len(text) == 40 and not text.strip(_HEX)


def git_dir_of(path: str | os.PathLike[str]) -> str | None:
    """The git directory of a repository at ``path`` (a work tree or a bare repository),
    or None when ``path`` is neither."""
    path = os.fspath(path)
    dot_git = os.path.join(path, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    if os.path.isfile(dot_git):
        with open(dot_git, encoding="utf-8", errors="replace") as fh:
            text = fh.read().strip()
        if text.startswith("gitdir: "):
            return os.path.join(path, text[len("gitdir: ") :])  # an absolute one stays as it is
        return None
    if os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects")):
        return path
    return None


def read_ref(git_dir: str | os.PathLike[str], ref: str, depth: int = 5) -> str | None:
    """The sha ``ref`` names in ``git_dir`` (loose, then packed), or None."""
    if depth == 0:
        return None
    git_dir = os.fspath(git_dir)
    common = git_dir
    pointer = _text(os.path.join(git_dir, "commondir"))
    if pointer is not None:
        common = os.path.join(git_dir, pointer.strip())
    for base in (git_dir, common):
        text = _text(os.path.join(base, ref), "ascii")
        if text is None:
            continue
        text = text.strip()
        if text.startswith("ref: "):
            return read_ref(git_dir, text[5:].strip(), depth - 1)
        return text if _is_sha(text) else None
    packed = _text(os.path.join(common, "packed-refs"))
    if packed is None:
        return None
    suffix = " " + ref
    for line in packed.splitlines():
        if line.endswith(suffix) and _is_sha(line[:40]):
            return line[:40]
    return None


def _text(path: str, encoding: str = "utf-8") -> str | None:
    """A small file's text (undecodable bytes replaced, unless ASCII is asked for); None when
    it cannot be read as a file."""
    try:
        # Read as bytes, then decoded: a text file opened as ASCII loads that codec's module,
        # which bytes.decode does not.
        with open(path, "rb") as fh:
            raw = fh.read()
        return raw.decode(encoding, "strict" if encoding == "ascii" else "replace")
    except (OSError, UnicodeDecodeError):
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
