"""The store's control files, and what a commit may leave in them: exactly what gitkb
writes. A ``.pre-commit-config.yaml`` runs on every collaborator's next commit and
``.gitattributes`` decides how ledgers merge, so neither may say anything else; the
config is parsed and held to the keys gitkb reads."""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Callable
from typing import TYPE_CHECKING

from gitkb import layout
from gitkb import record as rec
from gitkb.gates import Finding
from gitkb.store import config as store_config
from gitkb.store.config import StoreConfig
from gitkb.util.resources import data_dir

if TYPE_CHECKING:
    from gitkb.vcs.repository import CommitInfo, Repository

PRE_COMMIT_PATH = ".pre-commit-config.yaml"
GITATTRIBUTES_PATH = ".gitattributes"
README_PATH = "README.md"
CONTROL_FILES = (
    layout.CONFIG_PATH,
    PRE_COMMIT_PATH,
    GITATTRIBUTES_PATH,
    layout.GITIGNORE_PATH,
    README_PATH,
)
# The one line gitkb writes into .gitignore.
_IGNORED = f"/{layout.WORK_TREE_INDEX}"
_FORMATS = (layout.FORMAT_1, layout.FORMAT_2)
_MAX_LIMIT = 64 << 20


def template(name: str) -> bytes:
    """A control file as ``git kb init`` writes it (the README without the store's name)."""
    files = {
        PRE_COMMIT_PATH: "pre-commit-config.yaml",
        GITATTRIBUTES_PATH: "gitattributes",
        layout.GITIGNORE_PATH: "gitignore",
        README_PATH: "README.md",
    }
    return (data_dir("templates") / "store" / files[name]).read_bytes()


def findings(repo: Repository, commit: CommitInfo, path: str) -> list[Finding]:
    """How ``path`` at ``commit`` differs from what gitkb writes there."""
    raw = repo.read(commit.sha, path) or b""
    problem = problem_of(path, raw, lambda: repo.read(commit.sha, layout.CONFIG_PATH))
    return [Finding(path, "control", f"{path}: {problem}")] if problem else []


def problem_of(path: str, raw: bytes, config_bytes: Callable[[], bytes | None]) -> str | None:
    if path == layout.CONFIG_PATH:
        return config_problem(raw)
    if path == layout.GITIGNORE_PATH:
        lines = {line.strip() for line in raw.decode("utf-8", "replace").splitlines()}
        extra = sorted(lines - {"", _IGNORED})
        return f"holds {extra[0]!r}; gitkb ignores {_IGNORED} only" if extra else None
    if path == README_PATH:
        try:
            name = tomllib.loads((config_bytes() or b"").decode())["store"]["name"]
            expected = template(README_PATH).decode().format(name=name).encode()
        except (KeyError, TypeError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return "the store's name cannot be read from gitkb.toml"
        return None if raw == expected else "is not the README gitkb init writes"
    if raw != template(path):
        return "is not the file gitkb writes (a changed hook config runs on every clone)"
    return None


def config_problem(raw: bytes) -> str | None:
    """What is wrong with ``gitkb.toml`` bytes: only the keys gitkb reads, of their types
    (the store's one reader, ``gitkb.store.config``), with the values gitkb writes."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return f"is not valid TOML ({exc})"
    if not isinstance(data.get("store"), dict):
        return "has no [store] table"
    unread = store_config.problem(data)
    if unread:
        return unread
    config = store_config.parse(data, layout.CONFIG_PATH)
    if not config.name.strip() or "\n" in config.name:
        return "[store] name is one non-empty line"
    if config.format not in _FORMATS:
        return f"[store] format is one of {', '.join(_FORMATS)}"
    if config.schema != rec.SCHEMA_NAME:
        return f"[store] schema is {rec.SCHEMA_NAME}"
    if config.max_record_bytes > _MAX_LIMIT:
        return f"[store] max_record_bytes is a whole number of bytes up to {_MAX_LIMIT}"
    for pattern in config.allowed_refs:
        if not pattern.startswith("refs/") or pattern.startswith(layout.TRACE_REFS):
            return f"[refs] allow: {pattern!r} is no pattern of refs/ outside refs/kb/traces/"
    return None


def allowed_ref(config: StoreConfig, ref: str) -> bool:
    """Whether ``gitkb.toml`` lets ``ref`` (besides main and the trace refs) be pushed."""
    return any(fnmatch.fnmatchcase(ref, pattern) for pattern in config.allowed_refs)
