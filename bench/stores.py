"""Generated stores for the benches: ``size`` synthetic records in one import commit.

Written through the store's one write path (a single ``import`` change; the gates
are not the subject of these benches, so they do not run), then the index cache is
built once, as a store in use has it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

from gitkb import record as rec
from gitkb.store import Store
from gitkb.store.writer import Change
from gitkb.testing import synthetic


def build_store(path: Path, size: int) -> Store:
    store = Store.init(path, bare=True)
    edits: dict[str, bytes | None] = {}
    for n in range(size):
        record = synthetic.strategy(n)
        edits[rec.path_for(record)] = rec.dumps(record)

    def build(view) -> Change:
        return Change(
            "import",
            f"synthetic-{size}",
            edits,
            body=f"{size} generated records.",
            trailers=[("KB-Source", "synthetic"), ("KB-Records", str(size))],
        )

    store.commit([build])
    assert len(store.view()) == size
    # Closed, as the command that built it would leave it: SQLite folds the write-ahead
    # log into the cache file when its last connection closes, and a timed command must
    # not find (and fold in) the build's 90 MB log of a 10,000-record import.
    store.cache.close()
    return store


def fresh_records(size: int, count: int) -> list[bytes]:
    """``count`` records the store of ``size`` does not hold, as admission payloads."""
    return [rec.dumps(synthetic.strategy(size + 1_000_000 + n)) for n in range(count)]


def bytecode_note(env: dict) -> str:
    """How the timed commands' bytecode is handled, for a bench to print beside its figures
    (this environment sets PYTHONDONTWRITEBYTECODE; an installed gitkb has its bytecode)."""
    prefix = env["PYTHONPYCACHEPREFIX"]
    return (f"bytecode: compiled once into {prefix} (PYTHONPYCACHEPREFIX; "
            "PYTHONDONTWRITEBYTECODE unset), then read from there, as an installed "
            "gitkb's")  # fmt: skip


# What a user types: git finds ``git-kb`` on PATH (installed_env puts this checkout's there).
GIT_KB = ["git", "kb"]


def installed_env(work: Path, root: Path) -> dict:
    """The environment of a gitkb command timed as an installed gitkb runs: its bytecode
    compiled once, into a private cache folder under ``work``, and ``git kb`` running the
    ``git-kb`` script that an install writes: pip's wrapper of the ``[project.scripts]``
    entry point, its ``#!`` line this interpreter."""
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    entry = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["git-kb"]
    module, _, func = entry.partition(":")
    (bin_dir / "git-kb").write_text(
        f"#!{sys.executable}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\n"
        f"from {module} import {func}\nif __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        f"    sys.exit({func}())\n"
    )
    (bin_dir / "git-kb").chmod(0o755)
    env = dict(
        os.environ,
        PYTHONPATH=str(root),
        PYTHONPYCACHEPREFIX=str(work / "pycache"),
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def kept_store(work: Path, size: int) -> tuple[Path, float]:
    """``work/kb.git`` with ``size`` records, built unless already there (``--keep``); its
    path and the seconds the build took."""
    store_dir = work / "kb.git"
    start = time.perf_counter()
    if not store_dir.exists():
        work.mkdir(parents=True, exist_ok=True)
        build_store(store_dir, size)
    return store_dir, time.perf_counter() - start


def store_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a bench over a generated store: its size, and where to keep it."""
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--keep", help="Build the store here and keep it (reused if present).")


@contextlib.contextmanager
def bench_store(args: argparse.Namespace, root: Path) -> Iterator[tuple[Path, Path, float, dict]]:
    """(work folder, store, seconds its build took, the installed environment) for the
    block: under ``--keep`` or a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        store_dir, built_s = kept_store(work, args.records)
        yield work, store_dir, built_s, installed_env(work, root)
