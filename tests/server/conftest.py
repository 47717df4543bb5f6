"""Fixtures of the server tests: a bare store with the server hook installed, a clone of
it to push from, the record that clone pushed already, and that store served over each
transport in turn.

The hooked server (and, for a test that asks for ``held``, the server with its clone after
that push) is built once per test process by the real CLI and copied for each test
(helpers/templates.py): every test pushes into a server of its own."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import example_files, git, kb, put_git_kb_on_path
from helpers.pushes import admit_examples, has_object, push
from helpers.servers import TRANSPORTS, hosting
from helpers.teams import Team
from helpers.templates import copy_of

from gitkb import record as rec
from gitkb.store import Store
from gitkb.testing import synthetic


def held_record() -> dict:
    """The record the ``held`` state's clone admitted and pushed."""
    return synthetic.strategy(1)


def build_server(folder: Path) -> None:
    """``folder/server.git``: a bare store with the hook installed by `git kb hooks install`."""
    Store.init(folder / "server.git", bare=True)
    done = kb("hooks", "install", "--server", str(folder / "server.git"))
    assert done.returncode == 0, done.stderr.decode()


def build_held(folder: Path) -> None:
    """``build_server``, and ``folder/work``: its clone, which admitted ``held_record`` and
    pushed it (through the hook) to the server."""
    _pushed(folder, lambda clone: clone.admit(rec.dumps(held_record()), "insert"))


def build_examples(folder: Path) -> None:
    """``build_server``, and ``folder/work``: its clone, which admitted every example record
    and pushed them (through the hook) to the server."""
    _pushed(folder, admit_examples)


def _pushed(folder: Path, admit: Callable[[Store], object]) -> None:
    build_server(folder)
    git("clone", "-q", f"file://{folder / 'server.git'}", str(folder / "work"))
    clone = Store.open(folder / "work")
    admit(clone)
    done = push(clone)
    assert done.returncode == 0, done.stdout + done.stderr


# A test that asks for one of these fixtures starts from that state: the server together
# with its clone (``work``) after the clone's push.
PUSHED = {"held": build_held, "examples": build_examples}


@pytest.fixture
def server(request, tmp_path, tmp_path_factory, monkeypatch):
    """A bare store with the hook installed, and `git-kb` on the PATH its hook sees. A test
    that asks for ``held`` or ``examples`` too gets the server together with its clone
    (``work``) after the clone pushed those records."""
    put_git_kb_on_path(tmp_path, monkeypatch)
    pushed = [name for name in PUSHED if name in request.fixturenames]
    assert len(pushed) <= 1, f"one starting state at a time, not {pushed}"
    if pushed:
        copy_of(pushed[0], PUSHED[pushed[0]], tmp_path_factory, tmp_path)
    else:
        copy_of("server", build_server, tmp_path_factory, tmp_path)
    return tmp_path / "server.git"


@pytest.fixture
def clone(server, tmp_path):
    """A clone of ``server`` (``work``; copied with the server where the test asks for a
    pushed state)."""
    if not (tmp_path / "work").exists():
        git("clone", "-q", f"file://{server}", str(tmp_path / "work"))
    return Store.open(tmp_path / "work")


@pytest.fixture
def held(server, clone):
    """The record ``clone`` admitted and pushed: the server's main holds it, and is the
    clone's main."""
    record = held_record()
    assert has_object(server, f"main:{rec.path_for(record)}")
    assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip
    return record


@pytest.fixture
def examples(server, clone):
    """The example records ``clone`` admitted and pushed: the server's main holds each,
    and is the clone's main."""
    for path in example_files():
        assert has_object(server, f"main:{rec.path_for(json.loads(path.read_bytes()))}")
    assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip


@pytest.fixture
def team(tmp_path, tmp_path_factory, monkeypatch) -> Team:
    """A signed team around a hooked server (helpers/teams.py), `git-kb` on the PATH."""
    put_git_kb_on_path(tmp_path, monkeypatch)
    return Team.copied(tmp_path, tmp_path_factory)


@pytest.fixture(params=TRANSPORTS)
def hosted(request, server, tmp_path):
    """The hooked ``server`` over file://, git daemon, smart HTTP and ssh (gitolite3) in
    turn: a test using it asserts the same verdict over all four."""
    with hosting(request.param, server, tmp_path) as host:
        yield host
