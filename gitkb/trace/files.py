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
# No producer nests JSON deeper than a dozen levels; a deeper file is refused before any
# reader (the scrubber's walk, repr) can recurse through it.
MAX_JSON_DEPTH = 64


class JsonProblem(ValueError):
    """A trace file that is not bounded UTF-8 JSON; the message says why, in words."""


def parse_json(data: bytes) -> object:
    """``data`` as JSON, nested at most MAX_JSON_DEPTH levels; JsonProblem otherwise."""
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise JsonProblem(f"not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise JsonProblem(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return value  # too few brackets to nest that deep
    level: list = [value]
    for _ in range(MAX_JSON_DEPTH):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return value
    raise JsonProblem(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


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
            return parse_json(data)
        except JsonProblem as problem:
            self.refused.append(f"{path}: {problem}, ignored")
            return None
