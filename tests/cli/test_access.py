"""`git kb access`: the signers and roles of a store, each change one signed commit the
history rules accept only in gitkb's own rendering."""

from __future__ import annotations

import json
import time

import pytest
from helpers import git, kb
from helpers.records import strategy
from helpers.signing import allowed_signers, make_key, needs_ssh_keygen, sign_with, verify_commit

from gitkb.record import dumps
from gitkb.store import Store
from gitkb.vcs.trailers import format_message

pytestmark = [needs_ssh_keygen, pytest.mark.slow]


def ok(done) -> bytes:
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def one_line(done) -> str:
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1, lines
    assert lines[0].startswith("gitkb: ")
    return lines[0]


def test_access_init_add_revoke_show(tmp_path):
    keys = tmp_path / "keys"
    alice, bob = make_key(keys, "alice"), make_key(keys, "bob")
    store = Store.init(tmp_path / "kb")
    where = ["--store", str(store.location)]
    unsigned = kb("access", "init", "--admin", "alice", "--key", f"{alice}.pub", *where)
    assert "git is not set to sign" in one_line(unsigned)
    assert "access is off" in one_line(kb("access", "add", "bob", "--key", f"{bob}.pub", *where))
    sign_with(alice, "-C", str(store.location))
    ok(kb("access", "init", "--admin", "alice", "--key", f"{alice}.pub", *where))
    again = kb("access", "init", "--admin", "alice", "--key", f"{alice}.pub", *where)
    assert "access is on already" in one_line(again)
    ok(kb("access", "add", "bob", "--key", f"{bob}.pub", "--role", "curator", *where))
    taken = kb("access", "add", "bob", "--key", f"{bob}.pub", "--role", "curator", *where)
    assert "as curator already" in one_line(taken)
    assert "another signer" in one_line(kb("access", "add", "eve", "--key", f"{bob}.pub", *where))
    assert "no principal" in one_line(kb("access", "add", "b b", "--key", f"{bob}.pub", *where))
    bad_key = tmp_path / "bad.pub"
    bad_key.write_text("ssh-ed25519 not-base64\n")
    assert "bad.pub: " in one_line(kb("access", "add", "carol", "--key", str(bad_key), *where))
    ok(kb("access", "revoke", "bob", "--at", "2026-01-01", *where))
    assert "lists no carol" in one_line(kb("access", "revoke", "carol", *where))

    shown = json.loads(ok(kb("access", "show", "--json", *where)))
    assert shown["enabled"] and shown["require_signed"]
    assert [(s["principal"], s["role"], s["valid_before"]) for s in shown["signers"]] == [
        ("alice", "admin", ""),
        ("bob", "curator", "20260101000000Z"),
    ]
    text = ok(kb("access", "show", *where)).decode()
    assert "bob curator SHA256:" in text and "valid-before 20260101000000Z" in text
    config = (store.location / "gitkb.toml").read_text()
    assert '[access]\nrequire_signed = true\ncurators = [\n    "bob",\n]' in config
    signers = allowed_signers(tmp_path / "allowed", ("alice", alice))
    subjects = git("log", "--format=%H %s", "main", cwd=store.location).stdout.splitlines()
    assert [s.split(" ", 1)[1] for s in subjects] == [
        "kb access bob", "kb access bob", "kb access alice", f"kb init {store.location.name}"
    ]  # fmt: skip
    for line in subjects[:3]:
        assert verify_commit(store.location, line.split()[0], signers).returncode == 0
    assert b"0 commits break" in ok(kb("validate", "--history", str(store.location)))


def test_the_history_rules_refuse_an_allowed_signers_gitkb_did_not_write(tmp_path):
    store = Store.init(tmp_path / "kb")
    (store.location / "access").mkdir()
    good = 'alice namespaces="git" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEoIUtfzuGjIVTUbZ+R7nNW10pBX53SywJPLTBjS+5nb\n'  # noqa: E501
    (store.location / "access" / "allowed_signers").write_text(good + "mallory * ssh-ed25519 x\n")
    git("add", "-A", cwd=store.location)
    message = format_message("kb access alice", "", [("KB-Action", "access"),
                                                      ("KB-Record", "alice")])  # fmt: skip
    git("commit", "-q", "-m", message, cwd=store.location)
    done = kb("validate", "--history", str(store.location))
    assert done.returncode == 1
    assert b"access/allowed_signers: line 2: the options start" in done.stdout
    # and a hand-made [access] table
    git("reset", "-q", "--hard", "HEAD~", cwd=store.location)
    config = store.location / "gitkb.toml"
    config.write_text(config.read_text() + "\n[access]\nrequire_signed = 1\n")
    git("commit", "-qam", format_message("kb config access", "", [("KB-Action", "config")]),
        cwd=store.location)  # fmt: skip
    done = kb("validate", "--history", str(store.location))
    assert done.returncode == 1 and b"[access] holds exactly" in done.stdout


def test_the_server_anchor_takes_an_allowed_signers_file_and_names_a_bad_line(tmp_path):
    server = tmp_path / "server.git"
    Store.init(server, bare=True)
    admins = tmp_path / "admins"
    admins.write_text("# who may turn access on\nalice ssh-ed25519 not-a-key\n")
    done = kb("hooks", "install", "--server", str(server), "--admins", str(admins))
    assert "admins: line 2: the ssh-ed25519 key does not decode" in one_line(done)
    done = kb("hooks", "install", str(server), "--admins", str(admins))
    assert "pass it with --server" in one_line(done)


def test_access_verbs_refuse_what_would_lock_the_store_or_be_refused(tmp_path):
    keys = tmp_path / "keys"
    alice, bob, carol = (make_key(keys, name) for name in ("alice", "bob", "carol"))
    store = Store.init(tmp_path / "kb")
    where = ["--store", str(store.location)]
    here = ("-C", str(store.location))

    def tip() -> str:
        return git("rev-parse", "main", cwd=store.location).stdout.strip()

    sign_with(carol, *here)  # naming alice the admin while git signs as carol
    start = tip()
    wrong = one_line(kb("access", "init", "--admin", "alice", "--key", f"{alice}.pub", *where))
    assert "git signs with SHA256:" in wrong and "not alice's key SHA256:" in wrong
    assert tip() == start
    sign_with(alice, *here)
    ok(kb("access", "init", "--admin", "alice", "--key", f"{alice}.pub", *where))
    ok(kb("access", "add", "bob", "--key", f"{bob}.pub", *where))
    landed = tip()

    # the last admin revoked, or given another role: access could never change again
    for args in (
        ["revoke", "alice"],
        ["add", "alice", "--key", f"{alice}.pub", "--role", "curator"],
    ):
        line = one_line(kb("access", *args, *where))
        assert "leaves no admin with a key that does not end (now: alice)" in line
        assert "--force" in line
    # signed by a contributor, or by a key no line lists: the server would refuse it
    sign_with(bob, *here)
    line = one_line(kb("access", "add", "carol", "--key", f"{carol}.pub", *where))
    assert "the key of bob, a contributor here: an access change needs an admin's" in line
    sign_with(carol, *here)
    line = one_line(kb("access", "add", "carol", "--key", f"{carol}.pub", *where))
    assert "the key of no signer here" in line
    assert tip() == landed

    sign_with(alice, *here)
    ok(kb("access", "revoke", "alice", "--force", *where))
    assert b"0 commits break" in ok(kb("validate", "--history", str(store.location)))
    locked = kb("access", "add", "carol", "--key", f"{carol}.pub", "--role", "admin", *where)
    assert "the key of no signer here" in one_line(locked)


def test_a_key_rotation_keeps_the_old_key_s_commits_and_refuses_its_new_ones(tmp_path):
    keys = tmp_path / "keys"
    old, new = make_key(keys, "alice-old"), make_key(keys, "alice-new")
    store = Store.init(tmp_path / "kb.git", bare=True)
    where = ["--store", str(store.location)]
    here = ("-C", str(store.location))
    sign_with(old, *here)
    ok(kb("access", "init", "--admin", "alice", "--key", f"{old}.pub", *where))
    ok(kb("admit", "-", *where, input=dumps(strategy(1))))  # the old key, while it is valid
    ok(kb("access", "add", "alice", "--key", f"{new}.pub", "--role", "admin", *where))
    time.sleep(1.1)  # valid-before is a whole second: the commits above end before it
    sign_with(new, *here)
    ok(kb("access", "revoke", "alice", "--key", f"{old}.pub", *where))
    time.sleep(1.1)
    base = git("rev-parse", "main", cwd=store.location).stdout.strip()

    sign_with(old, *here)
    ok(kb("admit", "-", *where, input=dumps(strategy(2))))
    stale = git("rev-parse", "main", cwd=store.location).stdout.strip()
    done = kb("check", f"{base}..main", "--format", "json", *where)
    assert done.returncode == 1, done.stdout.decode()
    [refusal] = json.loads(done.stdout)["refusals"]
    assert refusal["commit"] == stale and refusal["rule"] == "access"
    assert "expired key" in refusal["line"], refusal["line"]

    git("update-ref", "refs/heads/main", base, cwd=store.location)
    sign_with(new, *here)
    ok(kb("admit", "-", *where, input=dumps(strategy(2))))
    assert kb("check", f"{base}..main", *where).returncode == 0
    assert b"0 commits break" in ok(kb("validate", "--history", str(store.location)))
    signers = allowed_signers(tmp_path / "allowed", ("alice", old), ("alice", new))
    subjects = git("log", "--format=%H %s", "main", cwd=store.location).stdout.splitlines()
    assert len(subjects) == 6
    for line in subjects[:-1]:  # every commit but the unsigned init, by either key
        assert verify_commit(store.location, line.split()[0], signers).returncode == 0
