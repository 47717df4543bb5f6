"""The frozen bundle: the run's own read-only copy of the bundle, hashed file by file.

Before the baseline, the bundle folder (the harness's folder: its helper modules
and data come along) is copied into the output folder with the named files under
their canonical names, made read-only, and every file's SHA-256 recorded. Every
evaluation runs from that copy only, and the copy is checked against the hashes
before and after each evaluation and before the winner commit: a candidate that
edits, adds or removes a bundle file stops the run (``BundleChanged``), so it can
never weaken the checks a later candidate is judged by.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitkb.errors import GitkbError
from gitkb.optimize import bundle as bundle_mod

# Folders that are tooling or gitkb's own default output, not bundle: never copied.
SKIPPED_FOLDERS = frozenset(
    {
        "__pycache__",
        ".git",
        ".hg",
        ".svn",
        ".pytest_cache",
        ".ruff_cache",
        ".mypy_cache",
        "optimize-out",
    }
)
MAX_FILES = 2000
MAX_BYTES = 512 << 20


class BundleChanged(GitkbError):
    """A file of the frozen bundle changed, appeared or went away during the run."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _walk(root: Path, exclude: tuple[Path, ...]) -> Iterator[tuple[str, Path]]:
    """(relative slash path, path) of every file under ``root``, skipping tooling folders
    and ``exclude`` (an output folder inside the bundle, say)."""
    seen_folders: set[str] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen_folders or any(Path(real) == e for e in exclude):
            dirs[:] = []
            continue
        seen_folders.add(real)
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_file():
                yield path.relative_to(root).as_posix(), path


@dataclass
class Frozen:
    """The frozen copy: its folder and each file's SHA-256."""

    path: Path
    files: dict[str, str]
    origin: str  # the folder it was copied from

    def current(self) -> dict[str, str]:
        return {rel: sha256(path) for rel, path in _walk(self.path, ())}

    def verify(self, when: str) -> None:
        """Raise BundleChanged, naming every changed, added and removed file."""
        now = self.current()
        if now == self.files:
            return
        changes = [
            f"{rel} changed" for rel in self.files if rel in now and now[rel] != self.files[rel]
        ]
        changes += [f"{rel} removed" for rel in self.files if rel not in now]
        changes += [f"{rel} added" for rel in now if rel not in self.files]
        raise BundleChanged(
            f"the frozen bundle changed {when}: {', '.join(changes[:6])}; the run is stopped "
            f"and nothing is committed ({self.path})"
        )

    def sources(self, reference_kernel: bool) -> bundle_mod.Sources:
        """The frozen copy's files, under their canonical names."""
        names = bundle_mod.NAMES
        budget = self.path / names["budget"]
        kernel = self.path / "kernel.py"
        return bundle_mod.Sources(
            folder=self.path,
            harness=self.path / names["harness"],
            cases=self.path / names["cases"],
            target=self.path / names["target"],
            budget=budget if budget.is_file() else None,
            reference_kernel=self.path / names["reference_kernel"] if reference_kernel else None,
            kernel=kernel if kernel.is_file() else None,
        )


def collect(files: bundle_mod.Sources, exclude: tuple[Path, ...] = ()) -> dict[str, Path]:
    """What the frozen copy will hold: relative path -> source file; refuses a folder too
    large to copy (before anything is written)."""
    copies: dict[str, Path] = {}
    total = 0
    for rel, path in _walk(files.folder, tuple(Path(os.path.realpath(e)) for e in exclude)):
        copies[rel] = path
        total += path.stat().st_size
        if len(copies) > MAX_FILES or total > MAX_BYTES:
            raise GitkbError(
                f"the bundle folder is too large to freeze (over {MAX_FILES} files or "
                f"{MAX_BYTES >> 20} MiB): keep the bundle in a folder of its own ({files.folder})"
            )
    names = bundle_mod.NAMES
    for key in ("harness", "cases", "target", "budget", "reference_kernel"):
        source = getattr(files, key)
        if source is not None:
            copies[names[key]] = source
    if files.budget is None:
        copies.pop(names["budget"], None)  # a budget.json beside an explicit --harness
    return copies


def freeze(copies: dict[str, Path], dest: Path, origin: Path) -> Frozen:
    """Copy the ``collect``-ed files into ``dest`` (which must not exist), make the copy
    read-only, hash it."""
    dest.mkdir(parents=True)
    for rel, source in copies.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    _make_read_only(dest)
    return Frozen(dest, {rel: sha256(dest / rel) for rel in sorted(copies)}, str(origin))


def _make_read_only(root: Path) -> None:
    """Files and folders lose their write bits (a speed bump; the hashes are the guard)."""
    for folder, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) & ~0o222)
        os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) & ~0o222)


class KernelTouched(BundleChanged):
    """An evaluation wrote the user's kernel file; it was put back and the run stopped."""


@dataclass
class KernelGuard:
    """The user's kernel file as the run found it. Candidates are evaluated from copies
    (``experiments/<id>/kernel.py``); one that writes the original anyway (a losing candidate
    must not leave it modified) gets it restored, byte for byte, and the run stopped."""

    path: Path
    content: bytes

    def verify(self, when: str) -> None:
        try:
            now = self.path.read_bytes()
        except OSError:
            now = None
        if now == self.content:
            return
        self.path.write_bytes(self.content)
        raise KernelTouched(
            f"the kernel file was {'removed' if now is None else 'written'} {when}: it is "
            f"restored, the run is stopped and nothing is committed ({self.path})"
        )
