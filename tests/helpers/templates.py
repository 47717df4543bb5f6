"""Expensive starting states (a hooked server with a clone, a filled store, a signed team)
built once per test process by the real code, as a test would build them, and copied for
each test: every test still gets a state of its own to change, at the cost of a copy.

Under pytest-xdist each worker is a process of its own, with its own ``tmp_path_factory``:
it builds a template the first time one of its tests asks, into its own base folder.

A copy is the template's folder, file for file (symlinks as symlinks, modes and times
kept), with the one thing a copy cannot take as it is fixed: where a git directory's
config or reflogs name the template's folder (a clone's ``remote.origin.url``,
``user.signingkey``, ``clone: from ...``) they name the copy's.
``tests/server/test_templates.py`` holds a copy to behaving as a fresh build."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

_BUILT: dict[str, Path] = {}  # name -> the template's folder, in this process


def template(name: str, build: Callable[[Path], object], factory: pytest.TempPathFactory) -> Path:
    """The folder ``build`` filled (called once per process for ``name``, with an empty
    folder): one name is one state, so two fixtures never share a name."""
    folder = _BUILT.get(name)
    if folder is None:
        folder = factory.mktemp(f"template-{name}")
        build(folder)
        _BUILT[name] = folder
    return folder


def built(name: str) -> Path:
    """The folder of the template ``name`` this process built (KeyError: none yet)."""
    return _BUILT[name]


def copy_of(
    name: str, build: Callable[[Path], object], factory: pytest.TempPathFactory, dest: Path
) -> Path:
    """Copy what the template ``name`` holds into ``dest`` (each entry of the template's
    folder becomes an entry of ``dest``, which may hold other things already); its git
    configs and reflogs name ``dest`` where they named the template. Returns ``dest``."""
    source = template(name, build, factory)
    dest.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, dest / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, dest / entry.name, follow_symlinks=False)
    was, now = f"{source}{os.sep}".encode(), f"{dest}{os.sep}".encode()
    for path in path_naming_files(dest):
        text = path.read_bytes()
        if was in text:
            path.write_bytes(text.replace(was, now))
    return dest


def path_naming_files(folder: Path) -> list[Path]:
    """The files of every git directory under ``folder`` that may name a path: its config
    and its reflogs."""
    git_dirs = [config.parent for config in folder.rglob("config")
                if config.is_file() and (config.parent / "HEAD").is_file()]  # fmt: skip
    logs = [p for git_dir in git_dirs for p in (git_dir / "logs").rglob("*") if p.is_file()]
    return [*(git_dir / "config" for git_dir in git_dirs), *logs]
