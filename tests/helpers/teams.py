"""A signed team around a hooked server: the server's anchor names alice; a clone turned
access on with alice admin, bob curator, carol contributor; mallory's key is listed
nowhere. Pushes go to the server over file:// (``origin``) or over any transport's
``Remote``."""

from __future__ import annotations

from pathlib import Path

from gitkb.record import dumps
from gitkb.store import Store
from gitkb.store import access as store_access
from helpers.pushes import push
from helpers.records import strategy
from helpers.run import git, kb
from helpers.servers import Remote, push_to
from helpers.signing import allowed_signers, make_key, public


class Team:
    def __init__(self, tmp_path: Path) -> None:
        self.remote: Remote | None = None
        keys = tmp_path / "signing-keys"  # the ssh transport keeps its login keys in keys/
        self.keys = {name: make_key(keys, name) for name in ("alice", "bob", "carol", "mallory")}
        self.server = tmp_path / "server.git"
        Store.init(self.server, bare=True)
        anchor = allowed_signers(tmp_path / "admins", ("alice", self.keys["alice"]))
        done = kb("hooks", "install", "--server", str(self.server), "--admins", str(anchor))
        assert done.returncode == 0, done.stderr.decode()
        self.work = tmp_path / "work"
        git("clone", "-q", f"file://{self.server}", str(self.work))
        for name, value in (("commit.gpgsign", "true"), ("gpg.format", "ssh")):
            git("config", name, value, cwd=self.work)
        self.sign_as("alice")
        store_access.init(self.store, "alice", self.key("alice"))
        store_access.add(self.store, "bob", self.key("bob"), "curator")
        store_access.add(self.store, "carol", self.key("carol"))
        self.record = strategy(1)
        self.sign_as("carol")
        self.store.admit(dumps(self.record), "insert")
        self.accepted()

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
