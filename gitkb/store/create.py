"""A new store: its repository and the ``kb init`` commit (gitkb.toml, the hooks' config,
the ignore and attribute files, a README)."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from gitkb import layout
from gitkb import record as rec
from gitkb.util.resources import data_dir
from gitkb.vcs import worktree
from gitkb.vcs.repository import Repository
from gitkb.vcs.trailers import format_message


def create_repository(location: Path, bare: bool, store_name: str) -> Repository:
    """The repository of a new store at ``location`` (a new or empty folder), ``main``
    holding its ``kb init`` commit."""
    repo = Repository.init(location, bare=bare)
    # Admissions write packs as they go; fast compression keeps that cheap, and
    # `git gc` recompresses later.
    repo.set_config("core", "compression", "1")
    repo = Repository.open(location)  # an object store that has read that setting
    config = {"store": {"name": store_name, "format": layout.FORMAT_2, "schema": rec.SCHEMA_NAME}}
    skeleton = data_dir("templates") / "store"
    files: dict[str, bytes | None] = {
        layout.CONFIG_PATH: tomli_w.dumps(config).encode(),
        ".pre-commit-config.yaml": (skeleton / "pre-commit-config.yaml").read_bytes(),
        ".gitattributes": (skeleton / "gitattributes").read_bytes(),
        layout.GITIGNORE_PATH: (skeleton / "gitignore").read_bytes(),
        "README.md": (skeleton / "README.md").read_text().format(name=store_name).encode(),
    }
    message = format_message(
        f"kb init {store_name}",
        "A new gitkb store.",
        [("KB-Action", "init"), ("KB-Store-Format", layout.FORMAT_2)],
    )
    commit = repo.write_commit(None, files, message)
    repo.update_ref(layout.BRANCH, None, commit, reason="gitkb: init")
    worktree.sync_work_tree(repo, layout.BRANCH, commit, list(files))
    return repo
