"""A store self-hosted over ssh, for real: OpenSSH's sshd on 127.0.0.1 serving the bare
store through gitolite3, gitkb's pre-receive installed as gitolite's repo-specific hook.
gitolite decides who may push at all (its ``GL_USER``); gitkb judges what they push and
names them in its refusal log."""

from __future__ import annotations

import pytest
from helpers import git
from helpers.pushes import forge_edit, gitkb_lines, has_object
from helpers.servers import GITOLITE_HOOK, gitolite_over_ssh, push_to

from gitkb import record as rec
from gitkb.hooks.install import server_shim
from gitkb.testing import synthetic
from gitkb.vcs.receiving import refusals
from gitkb.vcs.repository import Repository

pytestmark = pytest.mark.slow  # each test starts sshd and runs gitolite: seconds

ACCESS = {"server": {"alice": "RW", "bob": "R"}}  # alice contributes, bob only reads


@pytest.fixture
def host(server, tmp_path):
    """alice and bob, as ACCESS grants them, over sshd and gitolite3."""
    with gitolite_over_ssh(tmp_path, tmp_path, ACCESS, hook=server_shim()) as gitolite:
        yield gitolite


def test_a_contributors_insert_lands(server, clone, host):
    hooks = server / "hooks"
    assert (hooks / "pre-receive").is_symlink(), "gitolite's driver runs the repo's hooks"
    assert (hooks / f"pre-receive.h00-{GITOLITE_HOOK}").resolve().read_bytes() == server_shim()
    assert b"gitkb server hook" in (hooks / "reference-transaction").read_bytes()
    clone.admit(rec.dumps(synthetic.strategy(1)), "insert")
    done = push_to(clone.location, host.remote("alice", "server"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip


def test_a_refused_push_reaches_the_client_in_one_line_and_names_the_pusher(server, clone,
                                                                            host):  # fmt: skip
    record = synthetic.strategy(1)
    clone.admit(rec.dumps(record), "insert")
    alice = host.remote("alice", "server")
    assert push_to(clone.location, alice).returncode == 0
    held = git("rev-parse", "main", cwd=server).stdout.strip()

    commit = forge_edit(clone, record)
    done = push_to(clone.location, alice)
    assert done.returncode != 0
    lines = gitkb_lines(done)
    assert len(lines) == 1, done.stdout + done.stderr
    assert lines[0].startswith(f"remote: gitkb: refs/heads/main {commit}: {record['id']}: ")
    assert ": history: " in lines[0] and "kb insert may not change" in lines[0]
    assert git("rev-parse", "main", cwd=server).stdout.strip() == held
    assert not has_object(server, commit)
    [logged] = refusals(Repository.open(server))
    assert (logged.pusher, logged.via) == ("alice", "GL_USER")
    assert logged.problems == (lines[0].removeprefix("remote: gitkb: ").rstrip(),)


def test_a_user_without_write_access_is_refused_by_gitolite(server, clone, host):
    clone.admit(rec.dumps(synthetic.strategy(1)), "insert")
    done = push_to(clone.location, host.remote("bob", "server"))
    assert done.returncode != 0
    assert "DENIED" in done.stderr and "bob" in done.stderr, done.stderr
    assert not gitkb_lines(done), "gitolite refuses before gitkb's hook runs"
    assert not has_object(server, clone.tip)
    assert refusals(Repository.open(server)) == []
