"""Reading a trace's files at one commit under rule 6 (path safety).

Paths are relative to the trace root; absolute paths, ``..`` and symlinks that leave the
trace are refused before any content is read; a file over 8 MiB, or evidence over 32 MiB
in total, is refused. Every refusal is kept, in words, for the recon report.
"""

from __future__ import annotations

import json
import posixpath

from gitkb.vcs.repository import Repository

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_EVIDENCE_BYTES = 32 * 1024 * 1024
MAX_LINK_HOPS = 8


class TraceFiles:
    """The files of a trace at ``commit``; refusals are appended to ``refused``."""

    def __init__(self, repo: Repository, commit: str, refused: list[str] | None = None) -> None:
        self.repo = repo
        self.commit = commit
        self.refused: list[str] = refused if refused is not None else []

    def at(self, commit: str) -> TraceFiles:
        """The same trace at another commit, reporting into the same refusal list."""
        return TraceFiles(self.repo, commit, self.refused)

    def read(self, path: str, budget: list[int] | None = None) -> bytes | None:
        if path.startswith("/") or ".." in path.split("/") or not path:
            self.refused.append(f"{path}: not a path relative to the trace root")
            return None
        for _ in range(MAX_LINK_HOPS):  # a chain of in-trace links, bounded
            if not self.repo.is_symlink(self.commit, path):
                break
            target = (self.repo.read(self.commit, path) or b"").decode("utf-8", "replace")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if target.startswith("/") or resolved.startswith("..") or resolved == ".":
                self.refused.append(f"{path}: symlink to {target!r} leaves the trace, refused")
                return None
            path = resolved
        data = self.repo.read(self.commit, path)
        if data is None:
            return None
        if len(data) > MAX_FILE_BYTES:
            self.refused.append(f"{path}: {len(data)} bytes is over the 8 MiB limit, refused")
            return None
        if budget is not None:
            budget[0] += len(data)
            if budget[0] > MAX_EVIDENCE_BYTES:
                self.refused.append(f"{path}: evidence over 32 MiB in total, refused")
                return None
        return data

    def json(self, path: str) -> object:
        data = self.read(path)
        if data is None:
            return None
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.refused.append(f"{path}: not UTF-8 JSON, ignored")
            return None
