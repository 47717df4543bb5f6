"""The store's control files, and what a commit may leave in them: exactly what gitkb
writes. A ``.pre-commit-config.yaml`` runs on every collaborator's next commit and
``.gitattributes`` decides how ledgers merge, so neither may say anything else; the
config is parsed and held to the keys gitkb reads."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Callable
from typing import TYPE_CHECKING

from gitkb import layout
from gitkb import record as rec
from gitkb.access import policy, signers
from gitkb.gates import Finding
from gitkb.store import config as store_config
from gitkb.store.config import StoreConfig
from gitkb.util.resources import data_dir

if TYPE_CHECKING:
    from gitkb.vcs.repository import CommitInfo, Repository

PRE_COMMIT_PATH = ".pre-commit-config.yaml"
GITATTRIBUTES_PATH = ".gitattributes"
README_PATH = "README.md"
# The workflow of each forge that runs no server hooks (``git kb ci FORGE``).
CI_FILES = {"github": ".github/workflows/gitkb.yml", "gitlab": ".gitlab-ci.yml"}
_CI_TEMPLATES = {"github": "github-workflow.yml", "gitlab": "gitlab-ci.yml"}
CONTROL_FILES = (
    layout.CONFIG_PATH,
    PRE_COMMIT_PATH,
    GITATTRIBUTES_PATH,
    layout.GITIGNORE_PATH,
    README_PATH,
    *CI_FILES.values(),
)
# Where a CI template names the gitkb release it installs, and what such a name may be:
# a workflow written by an older gitkb stays what that gitkb rendered.
_VERSION_MARK = "@gitkb-version@"
_VERSION = r"[0-9]+(?:\.[0-9]+){1,3}(?:(?:a|b|rc|\.post|\.dev)[0-9]+)*"
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


def _ci_template(forge: str) -> str:
    return (data_dir("templates") / "ci" / _CI_TEMPLATES[forge]).read_text(encoding="utf-8")


def ci_file(forge: str, version: str) -> bytes:
    """The CI workflow gitkb writes for ``forge``, installing gitkb ``version``."""
    return _ci_template(forge).replace(_VERSION_MARK, version).encode()


def _ci_problem(path: str, raw: bytes) -> str | None:
    forge = next(f for f, p in CI_FILES.items() if p == path)
    template = _ci_template(forge)
    # The template with each version mark standing for one version, the same throughout.
    parts = [re.escape(part) for part in template.split(_VERSION_MARK)]
    pattern = f"(?P<v>{_VERSION})".join(parts[:2]) + "".join("(?P=v)" + part for part in parts[2:])
    text = raw.decode("utf-8", "replace")
    if re.fullmatch(pattern, text):
        return None
    return f"is not the workflow `git kb ci {forge}` writes (it runs on every pull request)"


def findings(repo: Repository, commit: CommitInfo, path: str) -> list[Finding]:
    """How ``path`` at ``commit`` differs from what gitkb writes there."""
    raw = repo.read(commit.sha, path) or b""
    problem = problem_of(path, raw, lambda: repo.read(commit.sha, layout.CONFIG_PATH))
    return [Finding(path, "control", f"{path}: {problem}")] if problem else []


def problem_of(path: str, raw: bytes, config_bytes: Callable[[], bytes | None]) -> str | None:
    if path == signers.SIGNERS_PATH:
        try:
            signers.parse(raw)
        except signers.SignersError as exc:
            return exc.message
        return None
    if path == layout.CONFIG_PATH:
        return config_problem(raw)
    if path == layout.GITIGNORE_PATH:
        lines = {line.strip() for line in raw.decode("utf-8", "replace").splitlines()}
        extra = sorted(lines - {"", _IGNORED})
        return f"holds {extra[0]!r}; gitkb ignores {_IGNORED} only" if extra else None
    if path in CI_FILES.values():
        return _ci_problem(path, raw)
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
    if "access" in data and (problem := policy.table_problem(data["access"])):
        return problem
    for pattern in config.allowed_refs:
        if not pattern.startswith("refs/") or pattern.startswith(layout.TRACE_REFS):
            return f"[refs] allow: {pattern!r} is no pattern of refs/ outside refs/kb/traces/"
    return None


def allowed_ref(config: StoreConfig, ref: str) -> bool:
    """Whether ``gitkb.toml`` lets ``ref`` (besides main and the trace refs) be pushed."""
    return any(fnmatch.fnmatchcase(ref, pattern) for pattern in config.allowed_refs)
