"""Installing gitkb's hooks: the local ones through the pre-commit framework, the
server's pre-receive shim into a bare repository (plain git, Gitea or GitLab layout)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from gitkb.access import signers
from gitkb.access.signers import SignersError
from gitkb.errors import GitkbError
from gitkb.layout import BRANCH
from gitkb.store.cache.index_cache import IndexCache
from gitkb.util.files import atomic_write
from gitkb.util.resources import data_dir
from gitkb.vcs import signing
from gitkb.vcs.repository import Repository

# Where each server expects a repository's pre-receive hook, under its git directory.
SERVER_LAYOUTS = {
    "git": "hooks/pre-receive",
    "gitea": "hooks/pre-receive.d/gitkb",  # Gitea's own pre-receive runs every script here
    "gitlab": "custom_hooks/pre-receive",
}
LOCAL_HOOK_TYPES = ("pre-commit", "commit-msg")
# The shim's first comment line: a hook that starts with it is gitkb's, any version.
_SHIM_MARK = b"# gitkb server hook:"
_INTERPRETER_LINE = b"INSTALL_PYTHON=''"


# Beside pre-receive in a plain git server: the check made with the ref locks held.
TRANSACTION_HOOK = "hooks/reference-transaction"


def server_shim(python: str | None = None, hook: str = "pre-receive") -> bytes:
    """The ``hook`` shim with ``python`` (default: this interpreter) recorded, so a
    hook installed from a virtualenv finds gitkb without it on the server's PATH."""
    shim = (data_dir("hooks") / hook).read_bytes()
    recorded = f"INSTALL_PYTHON={shlex.quote(python or sys.executable)}".encode()
    return shim.replace(_INTERPRETER_LINE, recorded, 1)


def install_server(
    path: str | os.PathLike,
    layout: str = "git",
    force: bool = False,
    admins: str | os.PathLike | None = None,
) -> Path:
    """Write the pre-receive shim into the bare repository at ``path``, recording this
    interpreter; return where it went. Another program already there is kept unless
    ``force``; an earlier gitkb shim is replaced. ``admins``: an allowed-signers file
    naming who may turn access on, kept in the repository's config (the anchor)."""
    if layout not in SERVER_LAYOUTS:
        raise GitkbError(f"unknown server layout {layout!r}; use {', '.join(SERVER_LAYOUTS)}", 2)
    anchor = _anchor(admins) if admins is not None else None
    repo = Repository.open(path)
    if repo.work_tree is not None:
        raise GitkbError(
            f"{path} is not a bare repository: the server hook belongs in the bare repository "
            "that receives pushes (in a working store, run `git kb hooks install` alone)"
        )
    shim = server_shim()
    target = repo.git_dir / SERVER_LAYOUTS[layout]
    if target.exists() and not force and _SHIM_MARK not in target.read_bytes()[:200]:
        raise GitkbError(f"{target} exists and is not gitkb's hook; --force replaces it")
    if not target.exists() or target.read_bytes() != shim:
        atomic_write(target, shim)
    target.chmod(0o755)
    if layout == "git":
        transaction = repo.git_dir / TRANSACTION_HOOK
        if (transaction.exists() and not force
                and _SHIM_MARK not in transaction.read_bytes()[:200]):  # fmt: skip
            raise GitkbError(f"{transaction} exists and is not gitkb's hook; --force replaces it")
        atomic_write(transaction, server_shim(hook="reference-transaction"))
        transaction.chmod(0o755)
    if anchor is not None:
        signing.write_anchor(repo.git_dir, anchor)
    _warm_cache(repo)
    return target


def _anchor(path: str | os.PathLike) -> list[str]:
    """The allowed-signers lines of an ``--admins`` file, as gitkb renders them."""
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GitkbError(f"{path}: cannot read the admins file ({exc})", 2) from None
    try:
        return [s.line() for s in signers.parse_anchor(text)]
    except SignersError as exc:
        raise GitkbError(f"{path}: {exc.message}", 2) from None


def _warm_cache(repo: Repository) -> None:
    """Build the server's index cache now, so the first push costs the push too."""
    tip = repo.resolve(BRANCH)
    if tip is not None:
        IndexCache.of(repo).warm(tip)


def install_local(path: str | os.PathLike) -> str:
    """Install the store's pre-commit and commit-msg hooks with the pre-commit framework,
    from the store's ``.pre-commit-config.yaml``; return the framework's report."""
    repo = Repository.open(path)
    work_tree = repo.work_tree
    if work_tree is None:
        raise GitkbError(
            f"{path} is a bare repository: it has no commits made in it to hook; "
            "use --server to install the pre-receive hook"
        )
    if not (work_tree / ".pre-commit-config.yaml").is_file():
        raise GitkbError(
            f"{work_tree} has no .pre-commit-config.yaml; `git kb init` writes one into a store"
        )
    command = [sys.executable, "-m", "pre_commit", "install"]
    for hook_type in LOCAL_HOOK_TYPES:
        command += ["--hook-type", hook_type]
    done = subprocess.run(command, cwd=work_tree, capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        raise GitkbError(f"pre-commit install failed in {work_tree}: {why[-1] if why else '?'}")
    return done.stdout.strip()
