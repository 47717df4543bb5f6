"""A signed team around a hooked server: the server's anchor names alice; a clone turned
access on with alice admin, bob curator, carol contributor; mallory's key is listed
nowhere. Pushes go to the server over file:// (``origin``) or over any transport's
``Remote``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkb.record import dumps
from gitkb.store import Store
from gitkb.store import access as store_access
from helpers.pushes import push
from helpers.records import strategy
from helpers.run import git, kb
from helpers.servers import Remote, push_to
from helpers.signing import allowed_signers, make_key, public
from helpers.templates import copy_of

NAMES = ("alice", "bob", "carol", "mallory")


class Team:
    """The team whose files are under ``tmp_path``: made there by ``Team.build``, or copied
    there from one built once per test process by ``Team.copied``."""

    def __init__(self, tmp_path: Path) -> None:
        self.remote: Remote | None = None
        keys = tmp_path / "signing-keys"  # the ssh transport keeps its login keys in keys/
        self.keys = {name: keys / name for name in NAMES}
        self.server = tmp_path / "server.git"
        self.work = tmp_path / "work"
        self.record = strategy(1)

    @classmethod
    def build(cls, tmp_path: Path) -> Team:
        """Make the team under ``tmp_path``: keys, the hooked server with its anchor, and a
        clone that turned access on and pushed carol's signed ``record``."""
        team = cls(tmp_path)
        for name, key in team.keys.items():
            make_key(key.parent, name)
        Store.init(team.server, bare=True)
        anchor = allowed_signers(tmp_path / "admins", ("alice", team.keys["alice"]))
        done = kb("hooks", "install", "--server", str(team.server), "--admins", str(anchor))
        assert done.returncode == 0, done.stderr.decode()
        git("clone", "-q", f"file://{team.server}", str(team.work))
        for name, value in (("commit.gpgsign", "true"), ("gpg.format", "ssh")):
            git("config", name, value, cwd=team.work)
        team.sign_as("alice")
        store_access.init(team.store, "alice", team.key("alice"))
        store_access.add(team.store, "bob", team.key("bob"), "curator")
        store_access.add(team.store, "carol", team.key("carol"))
        team.sign_as("carol")
        team.store.admit(dumps(team.record), "insert")
        team.accepted()
        return team

    @classmethod
    def copied(cls, tmp_path: Path, factory: pytest.TempPathFactory) -> Team:
        """The team ``build`` makes, copied under ``tmp_path`` from the one this process
        built (helpers/templates.py): the clone signs with the copy's keys and pushes to
        the copy's server."""
        return cls(copy_of("team", cls.build, factory, tmp_path))

    def key(self, name: str) -> tuple[str, str]:
        return store_access.key_of(public(self.keys[name]), name)

    @property
    def store(self) -> Store:
        return Store.open(self.work)

    def sign_as(self, name: str | None) -> None:
        """Sign the clone's next commits as ``name`` (None: unsigned)."""
        git("config", "commit.gpgsign", "false" if name is None else "true", cwd=self.work)
        if name is not None:
            git("config", "user.signingkey", str(self.keys[name]), cwd=self.work)

    def accepted(self) -> None:
        """Push main to ``self.remote`` (where a test serves the store over a transport;
        else origin) and see it land; origin/main follows."""
        if self.remote is None:
            done = push(self.store)
        else:
            done = push_to(self.work, self.remote)
            git("fetch", "-q", "origin", cwd=self.work)
        assert done.returncode == 0, done.stdout + done.stderr

    def refused(self, commit: str, *words: str, remote: Remote | None = None) -> str:
        """Push main (to ``remote``, else origin); it is refused by one access line naming
        ``commit`` and ``words``; the clone goes back to the server's main. Returns what
        the line says after ``gitkb: ``."""
        remote = remote or self.remote
        done = push(self.store) if remote is None else push_to(self.work, remote)
        output = done.stdout + done.stderr
        assert done.returncode != 0 and "pre-receive hook declined" in output, output
        lines = [ln for ln in output.splitlines() if ln.startswith("remote: gitkb: ")]
        line = next((ln for ln in lines if f" {commit}: " in ln and ": access: " in ln), None)
        assert line is not None, output
        for word in words:
            assert word in line, line
        git("reset", "-q", "--hard", "origin/main", cwd=self.work)
        return line.split("gitkb: ", 1)[1].rstrip()
