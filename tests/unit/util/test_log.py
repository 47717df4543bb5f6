"""One log channel: the library's notes and the optimizer's live lines go through logging,
and the top-level -v / -q set how much of it reaches stderr."""

from __future__ import annotations

import logging

import pytest
from helpers import example_files, kb

from gitkb.testing.traces import legacy_trace
from gitkb.util.log import LIVE_LOGGER

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def _break_cache(store) -> None:
    cache = store.location / ".git" / "gitkb-cache" / "index.sqlite3"
    for suffix in ("-wal", "-shm"):
        cache.with_name(cache.name + suffix).unlink(missing_ok=True)
    cache.write_bytes(b"not a database at all\n" * 100)


def test_notes_reach_stderr_unless_quiet(store):
    assert kb("admit", str(example_files()[0]), "--store", str(store.location)).returncode == 0
    _break_cache(store)
    said = kb("list", "--store", str(store.location)).stderr.decode().splitlines()
    notes = [line for line in said if line.startswith("gitkb: ")]
    assert len(notes) == 1 and notes[0].startswith("gitkb: the index cache ")
    assert "rebuilding it" in notes[0]
    _break_cache(store)
    quiet = kb("-q", "list", "--store", str(store.location))
    assert quiet.returncode == 0
    assert quiet.stderr.decode().splitlines() == [line for line in said if line not in notes]


def test_verbose_adds_the_debug_notes(tmp_path, store):
    trace = legacy_trace(tmp_path / "trace")
    argv = ["mine", str(trace), "--dry-run", "--distiller", "true", "--store", str(store.location)]
    plain = kb(*argv)
    assert plain.returncode == 0, plain.stderr.decode()
    assert b"gitkb: running " not in plain.stderr
    verbose = kb("-v", *argv)
    assert verbose.returncode == 0, verbose.stderr.decode()
    ran = [line for line in verbose.stderr.splitlines() if line.startswith(b"gitkb: running ")]
    assert ran and all(line.split()[2].endswith(b"true") for line in ran)


def test_the_optimizer_live_lines_are_a_logger_of_their_own(capsys):
    from gitkb.optimize.setup import RunConfig
    from gitkb.util import log

    log.logger(__name__)
    RunConfig.progress("[gitkb] r001-c001 status=promoted")
    log.logger("gitkb.store.cache.index_cache").info("a note")
    assert capsys.readouterr().err.splitlines() == [
        "[gitkb] r001-c001 status=promoted",
        "gitkb: a note",
    ]
    assert logging.getLogger(LIVE_LOGGER).getEffectiveLevel() == logging.INFO
