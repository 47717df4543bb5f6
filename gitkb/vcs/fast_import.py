"""A whole repository written in one ``git fast-import``: the example and test traces.

C git writes the objects, so a trace of a thousand commits is built in a fraction of a
second and every object in it is git's own (what a miner reads from a real trace).
fast-import cannot sign: where git is set to sign, each commit is written again through
the signing path (``Repository.rewrite_commit``), parents first.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitkb.errors import GitkbError
from gitkb.vcs.repository import Repository

FILE_MODE = "100644"
LINK_MODE = "120000"


@dataclass(slots=True, frozen=True)
class ImportedFile:
    """One tree entry: a regular file's bytes, or a symbolic link's target (``link``)."""

    data: bytes
    link: bool = False


@dataclass(slots=True, frozen=True)
class ImportedCommit:
    """One commit of the stream; ``files`` maps a path to its entry, or None to delete it.
    ``parent_mark`` None continues ``ref`` (or starts it)."""

    ref: str
    mark: int
    message: bytes
    files: Mapping[str, ImportedFile | None]
    author: str  # "Name <email>"
    when: int  # seconds since the epoch, UTC
    parent_mark: int | None = None


def _stream(commits: Sequence[ImportedCommit]) -> bytes:
    out = bytearray()
    for c in commits:
        name, email = c.author.rsplit(" <", 1)
        ident = f"{name} <{email} {c.when} +0000\n".encode()
        out += f"commit {c.ref}\nmark :{c.mark}\n".encode()
        out += b"author " + ident + b"committer " + ident
        out += f"data {len(c.message)}\n".encode() + c.message
        if c.parent_mark is not None:
            out += f"from :{c.parent_mark}\n".encode()
        for path, entry in c.files.items():
            if entry is None:
                out += f"D {path}\n".encode()
                continue
            mode = LINK_MODE if entry.link else FILE_MODE
            out += f"M {mode} inline {path}\ndata {len(entry.data)}\n".encode()
            out += entry.data + b"\n"
        out += b"\n"
    return bytes(out)


def _git(*args: str, cwd: Path | None = None, input: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise GitkbError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def import_commits(
    path: Path, commits: Sequence[ImportedCommit], bare: bool = False
) -> dict[int, str]:
    """Create a repository at ``path`` holding ``commits`` (branch ``main`` checked out
    unless ``bare``); returns each commit's id by its mark."""
    if shutil.which("git") is None:
        raise GitkbError("writing a trace needs C git on PATH (git fast-import)")
    path.parent.mkdir(parents=True, exist_ok=True)
    _git("init", "-q", "-b", "main", *(["--bare"] if bare else []), str(path))
    marks = path / ("fast-import.marks" if bare else ".git/fast-import.marks")
    _git(
        "fast-import", "--quiet", "--force", f"--export-marks={marks}",
        cwd=path, input=_stream(commits),
    )  # fmt: skip
    ids = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        ids[int(mark.lstrip(":"))] = sha
    marks.unlink()
    ids = _signed(path, commits, ids)
    if not bare and commits:
        _git("checkout", "-q", "-f", "main", cwd=path)
    return ids


def _signed(path: Path, commits: Sequence[ImportedCommit], ids: dict[int, str]) -> dict[int, str]:
    """The commits as written again signed, where git is set to sign (else as they are),
    each ref moved to its signed tip."""
    repo = Repository.open(path)
    if not commits or repo.signer() is None:
        return ids
    signed: dict[str, str] = {}
    tips: dict[str, tuple[str, str]] = {}
    with repo.batch():
        for c in commits:
            old = ids[c.mark]
            info = repo.commit(old)
            parents = [signed.get(p, p) for p in info.parents]
            signed[old] = repo.rewrite_commit(old, parents, {}, info.message)
            tips[c.ref] = (old, signed[old])
    for ref, (old, new) in tips.items():
        repo.update_ref(ref, old, new, reason="gitkb: sign")
    return {mark: signed[sha] for mark, sha in ids.items()}
