"""Fixtures of the server tests: a bare store with the server hook installed, a clone of
it to push from, and that store served over each transport in turn."""

from __future__ import annotations

import pytest
from helpers import git, kb, put_git_kb_on_path
from helpers.servers import TRANSPORTS, hosting

from gitkb.store import Store


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A bare store with the hook installed, and `git-kb` on the PATH its hook sees."""
    put_git_kb_on_path(tmp_path, monkeypatch)
    Store.init(tmp_path / "server.git", bare=True)
    done = kb("hooks", "install", "--server", str(tmp_path / "server.git"))
    assert done.returncode == 0, done.stderr.decode()
    return tmp_path / "server.git"


@pytest.fixture
def clone(server, tmp_path):
    git("clone", "-q", f"file://{server}", str(tmp_path / "work"))
    return Store.open(tmp_path / "work")


@pytest.fixture(params=TRANSPORTS)
def hosted(request, server, tmp_path):
    """The hooked ``server`` over file://, git daemon, smart HTTP and ssh (gitolite3) in
    turn: a test using it asserts the same verdict over all four."""
    with hosting(request.param, server, tmp_path) as host:
        yield host
