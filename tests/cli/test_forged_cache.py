"""A clone's index cache forged by hand (someone edits the SQLite file under .git) never
makes a reader serve what main does not hold: every reader verb (show, list, query,
resolve), run as the real CLI, answers exactly as it does over an honest cache.

Each forged row is self-consistent (its bytes match the blob id it names, its columns
are derived from those bytes), so the cache's own checks pass it; only main's tree
can tell it is a lie."""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest
from helpers import forge_cache_row, kb

from gitkb import record as rec
from gitkb.store import Store
from gitkb.testing import synthetic
from gitkb.vcs.plain import blob_id

FAMILIES = 4
HELD = [synthetic.strategy(n, families=FAMILIES) for n in (0, 3, 6, 12)]  # 0, 6, 12: hopper op000/2
GHOST = synthetic.strategy(24, families=FAMILIES)  # hopper, op000: in every question below
TARGET = HELD[0]  # nvidia hopper triton op000


def _forged_copy() -> dict:
    forged = json.loads(rec.dumps(TARGET))
    forged["payload"]["change"] = "FORGED: disable the bounds check"
    forged["payload"]["implementation"]["snippet"] += "+    FORGED = True\n"
    return forged


def _row(db: sqlite3.Connection, path: str, raw: bytes) -> None:
    """Replace (or add) ``path``'s rows with a self-consistent row of ``raw``."""
    _drop(db, path)
    forge_cache_row(db, path, raw)


def _drop(db: sqlite3.Connection, path: str) -> None:
    for table in ("files", "records", "entries", "kernels", "arches"):
        db.execute(f"DELETE FROM {table} WHERE path = ?", (path,))


def forge_content(db):
    """The target's row holds other bytes (and their blob id) than main's blob."""
    _row(db, rec.path_for(TARGET), rec.dumps(_forged_copy()))


def forge_bytes(db):
    """Only the target's file row holds other bytes (and their blob id); its record row,
    columns and blob, is main's."""
    raw = rec.dumps(_forged_copy())
    db.execute("UPDATE files SET blob = ?, raw = ? WHERE path = ?",
               (blob_id(raw), zlib.compress(raw), rec.path_for(TARGET)))  # fmt: skip


def forge_ghost(db):
    """A row for a record (and path) main does not hold."""
    _row(db, rec.path_for(GHOST), rec.dumps(GHOST))


def forge_other_blob(db):
    """The target's path points at another record's blob, which main does hold."""
    _row(db, rec.path_for(TARGET), rec.dumps(HELD[2]))


def forge_missing(db):
    """The target's rows are gone: main holds a record the cache does not."""
    _drop(db, rec.path_for(TARGET))


ATTACKS = {
    "content": forge_content,
    "bytes": forge_bytes,
    "ghost": forge_ghost,
    "other-blob": forge_other_blob,
    "missing-row": forge_missing,
}
# What each verb is asked; every question reaches the target and the ghost.
VERBS = {
    "show": ["show", TARGET["id"]],
    "show-ghost": ["show", GHOST["id"]],
    "list": ["list", "--json"],
    "list-scoped": ["list", "--json", "--arch", "hopper", "--operator", "op000"],
    "query": ["query", "--json", "--arch", "hopper", "--family", "op000", "--limit", "50"],
    "query-text": ["query", "--json", "--vendor", "nvidia", "synthetic"],
    "resolve": ["resolve", "--kernel", "op000", "--arch", "hopper", "--dsl", "any"],
}
# Absence is checked against the tree where a reader would otherwise say "no such
# record" or leave it out of a listing. A ranked reader's pool is chosen by the cache's
# derived columns (checked by a random sample, not per row), so a row hidden from it
# (deleted, or moved out of scope by another record's bytes) can leave it out; what is
# served is still main's.
ABSENCE_CHECKED = ("show", "show-ghost", "list", "list-scoped")
RANKED = ("query", "query-text", "resolve")
HIDES = ("missing-row", "other-blob")


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """A store holding HELD, as a bare repository."""
    location = tmp_path_factory.mktemp("forged") / "seed.git"
    store = Store.init(location, bare=True)
    for record in HELD:
        store.admit(rec.dumps(record), "insert")
    return location


@pytest.fixture(scope="module")
def asked(seed, tmp_path_factory):
    """(verb, tmp_path) -> (a copy under tmp_path of a store whose cache that verb's honest
    answer built, that answer as given there): each verb is asked once over a copy of the
    seed of its own, as each test of it would first ask it over a copy of its own; an
    answer naming the store names the test's copy."""
    answers: dict[str, tuple[Path, tuple[int, bytes, bytes]]] = {}

    def ask(verb: str, tmp_path: Path) -> tuple[Path, tuple[int, bytes, bytes]]:
        if verb not in answers:
            location = _store(seed, tmp_path_factory.mktemp(f"asked-{verb}"))
            answers[verb] = (location, _answer(location, VERBS[verb]))
        over, (code, out, err) = answers[verb]
        location = _store(over, tmp_path)
        here = (bytes(over), bytes(location))
        return location, (code, out.replace(*here), err.replace(*here))

    return ask


def _store(seed, tmp_path):
    location = tmp_path / "kb.git"
    shutil.copytree(seed, location, symlinks=True)
    return location


def _answer(location, argv):
    done = kb(*argv, "--store", str(location))
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("verb", list(VERBS))
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_forged_cache_row_changes_no_answer(asked, tmp_path, verb, attack):
    location, honest = asked(verb, tmp_path)  # the honest answer, which built the cache
    if verb != "show-ghost":
        assert honest[0] == 0, honest[2].decode()
    with sqlite3.connect(location / "gitkb-cache" / "index.sqlite3") as db:
        ATTACKS[attack](db)
    code, out, err = _answer(location, VERBS[verb])
    assert b"FORGED" not in out and GHOST["id"].encode() not in out
    assert b"Traceback" not in err
    if verb in RANKED and attack in HIDES:
        assert code == 0, err.decode()
        assert _served(verb, out) <= _served(verb, honest[1])  # main's records, main's bytes
    else:
        assert (code, out) == honest[:2], err.decode()


def _served(verb: str, out: bytes) -> set[str]:
    """What a ranked reader served: each hit's id with its payload as served."""
    answer = json.loads(out)
    if verb == "resolve":
        return {json.dumps(rank, sort_keys=True) for rank in answer["ranks"]}
    return {json.dumps(hit, sort_keys=True) for hit in answer["records"]}


def test_show_serves_main_blob_after_a_forged_row(asked, tmp_path):
    """The bytes ``show`` prints are main's blob, byte for byte, with the row forged."""
    location, listed = asked("list", tmp_path)
    assert listed[0] == 0
    with sqlite3.connect(location / "gitkb-cache" / "index.sqlite3") as db:
        forge_content(db)
    done = kb("show", TARGET["id"], "--store", str(location))
    assert done.returncode == 0 and done.stdout == rec.dumps(TARGET)


@pytest.mark.slow
def test_an_honest_cache_is_not_rebuilt(seed, tmp_path):
    """The checks only read: over an honest cache no verb rebuilds it; over a forged one
    the rebuild is said (a note on stderr)."""
    location = _store(seed, tmp_path)
    for argv in VERBS.values():
        kb(*argv, "--store", str(location))
    for argv in VERBS.values():
        done = kb("-v", *argv, "--store", str(location))
        assert b"rebuilding" not in done.stderr, (argv, done.stderr.decode())
    with sqlite3.connect(location / "gitkb-cache" / "index.sqlite3") as db:
        forge_ghost(db)
    done = kb("-v", *VERBS["query"], "--store", str(location))
    assert b"rebuilding" in done.stderr, done.stderr.decode()


def test_a_kept_store_checks_each_blob_once_and_every_new_one(seed, tmp_path):
    """A store kept open (``git kb mcp``) checks a blob's bytes against its id once and
    serves them from memory after: bytes forged later under that id are never served. A
    blob it has not checked yet is checked as ever, and a forged one is caught."""
    from gitkb.store.cache.source import Lie

    location = _store(seed, tmp_path)
    store = Store.open(location)
    target, unread = rec.path_for(TARGET), rec.path_for(HELD[1])
    assert store.view().read_checked([target]) == {target: rec.dumps(TARGET)}
    with sqlite3.connect(location / "gitkb-cache" / "index.sqlite3") as db:
        for path in (target, unread):
            db.execute("UPDATE files SET raw = ? WHERE path = ?", (zlib.compress(b"{}"), path))
    assert store.view().read_checked([target]) == {target: rec.dumps(TARGET)}
    with pytest.raises(Lie):
        store.view().read_checked([unread])
