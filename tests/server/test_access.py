"""Who may push what: each pushed commit's SSH signature checked against its first
parent's access files, by real pushes over file:// into a hooked bare store. Every
attack is refused with one ``gitkb:`` line naming the commit, the principal (or
unsigned / unknown key / expired key), the action and the role it needs (each attack over
every transport, and an admin's commit replayed onto another base, are in
test_access_transports.py)."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest
from helpers import git, kb, put_git_kb_on_path
from helpers.pushes import forge, gitkb_lines, push, record_edits
from helpers.records import strategy
from helpers.signing import allowed_signers, make_key, needs_ssh_keygen, pgp_signed, public

from gitkb.access.signers import AllowedSigner
from gitkb.layout import BRANCH
from gitkb.record import dumps, path_for
from gitkb.store import Store
from gitkb.store import access as store_access
from gitkb.vcs import signing
from gitkb.warmstart.attest import attest
from gitkb.warmstart.retract import retract

pytestmark = [needs_ssh_keygen, pytest.mark.slow]


def test_signed_roles_land_and_each_attack_is_refused_with_one_line(team):
    # unsigned, when the store requires signatures
    team.sign_as(None)  # (gitkb's own writers refuse to write so: a hand-made commit)
    record = strategy(2)
    sha = forge(team.store, record_edits({path_for(record): record}), f"kb insert {record['id']}",
                [("KB-Action", "insert"), ("KB-Record", record["id"])])  # fmt: skip
    team.refused(
        sha,
        "unsigned: kb insert needs a contributor's signature (the commit is "
        "unsigned and this store requires signed commits ([access] require_signed)",
    )
    # signed, but with a forge's OpenPGP signature: no SSH signature, so no one's
    pgp = pgp_signed(team.work, sha)
    git("update-ref", BRANCH, pgp, cwd=team.work)
    team.refused(
        pgp,
        "unsigned: kb insert needs a contributor's signature (its signature is "
        "no SSH signature (an OpenPGP or X.509 one) and this store requires",
    )
    # a key no line lists
    team.sign_as("mallory")
    sha = team.store.admit(dumps(strategy(2)), "insert").commit
    team.refused(
        sha,
        "unknown key: kb insert needs a contributor's signature (its key SHA256:",
        "is listed for no one; judged by access/allowed_signers at ",
    )
    # a key listed from a time still to come
    team.sign_as("alice")
    erin = make_key(team.keys["alice"].parent, "erin")
    later = AllowedSigner(
        "erin", *store_access.key_of(public(erin), "erin"), valid_after="20990101000000Z"
    )
    held = team.store.repo.read(team.store.tip, "access/allowed_signers")
    forge(team.store, {"access/allowed_signers": held + later.line().encode() + b"\n"},
          "kb access erin", [("KB-Action", "access"), ("KB-Record", "erin")])  # fmt: skip
    team.accepted()
    git("config", "user.signingkey", str(erin), cwd=team.work)
    sha = team.store.admit(dumps(strategy(2)), "insert").commit
    team.refused(
        sha,
        "not yet valid key: kb insert needs a contributor's signature (erin's "
        "key's window starts at 2099-01-01 00:00:00 UTC; judged by",
    )
    # a contributor's valid signature on a retract, and on curate --apply
    team.sign_as("carol")
    sha = retract(team.store, team.record["id"], "I say so").commit
    team.refused(sha, "carol: kb retract needs a curator's signature", "carol is a contributor")
    for _ in range(2):
        attest(team.store, team.record["id"], "not_reproduced", by="box")
    done = kb("curate", "--retire", "--apply", "--store", str(team.work))
    assert done.returncode == 0, done.stderr.decode()
    team.refused(team.store.tip, "carol: kb retract needs a curator's")
    # a contributor adding themself as admin
    sha = store_access.add(team.store, "carol", team.key("carol"), "admin").commit
    team.refused(sha, "carol: kb access needs an admin's signature")
    # a commit that adds a key and uses it
    team.sign_as("mallory")
    sha = store_access.add(team.store, "mallory", team.key("mallory"), "admin").commit
    team.refused(sha, "unknown key: kb access needs an admin's")
    # a tampered signed commit: carol's admission with a byte of its message changed
    team.sign_as("carol")
    signed = team.store.admit(dumps(strategy(3)), "insert").commit
    raw = git("cat-file", "commit", signed, cwd=team.work).stdout
    forged = raw.replace("\n\nkb insert", "\n\nkb  insert", 1)
    made = git("hash-object", "-w", "-t", "commit", "--stdin", cwd=team.work, input=forged)
    tampered = made.stdout.strip()
    git("update-ref", BRANCH, tampered, cwd=team.work)
    team.refused(tampered, "bad signature: kb insert needs a contributor's")

    # the happy paths: a curator retracts, an admin adds a signer
    team.sign_as("bob")
    retract(team.store, team.record["id"], "not reproduced")
    team.sign_as("alice")
    store_access.add(team.store, "dave", team.key("mallory"))
    team.accepted()
    assert Store.open(team.server).view().entry(team.record["id"])["status"] == "deprecated"


def test_a_refusal_names_the_file_it_is_about(team):
    """The hook's line names the record a refused retract changes (the control file a
    refused role change does: carol's key is listed, only gitkb.toml's admins change),
    and so do a check's reports for a forge."""
    team.sign_as("carol")
    retracted = retract(team.store, team.record["id"], "I say so").commit
    where = path_for(team.record)
    line = team.refused(retracted, "carol: kb retract needs a curator's")
    assert line.startswith(f"refs/heads/main {retracted}: {where}: access: "), line
    retract(team.store, team.record["id"], "I say so")
    store_access.add(team.store, "carol", team.key("carol"), "admin")
    checked = kb("check", "origin/main..main", "--store", str(team.work), "--format", "json")
    paths = {r["line"].split(": access: ")[1][:30]: r["path"] for r in
             json.loads(checked.stdout)["refusals"]}  # fmt: skip
    assert paths == {
        "carol: kb retract needs a cura": where,
        "carol: kb access needs an admi": "gitkb.toml",
    }, paths
    github = kb("check", "origin/main..main", "--store", str(team.work), "--format", "github")
    assert f"::error file={where},title=gitkb access::" in github.stdout.decode()


def test_a_merge_with_a_change_of_its_own_needs_its_role_signed_on_it(team):
    """A merge that retracts a record while merging carol's insert: its net change needs
    a curator, signed on the merge (merges that add nothing: test_access_merges.py)."""
    team.sign_as("carol")
    team.store.admit(dumps(strategy(2)), "insert")
    git("branch", "side", "main", cwd=team.work)
    git("reset", "-q", "--hard", "origin/main", cwd=team.work)
    where = path_for(team.record)
    for signer in ("carol", "bob"):
        team.sign_as(signer)
        git("merge", "-q", "--no-ff", "--no-commit", "side", cwd=team.work)
        record = json.loads((team.work / where).read_text())
        record["status"] = "deprecated"
        (team.work / where).write_text(dumps(record).decode())
        git("commit", "-qam", "Merge branch 'side'", cwd=team.work)
        if signer == "bob":
            break
        merge = team.store.tip
        # validate --history on the clone gives the verdict the server gives
        replayed = kb("validate", "--history", str(team.work))
        assert replayed.returncode == 1
        words = "carol: a merge bringing a retraction or its lifting"
        assert f"{merge[:12]} {where}: access: {words}" in replayed.stdout.decode()
        team.refused(merge, words, "needs a curator's signature (carol is a contributor")
    team.accepted()


def test_a_trace_ref_lands_only_with_the_signed_commits_that_cite_it(team, tmp_path):
    """git signs no ref update: where access is on, a trace label is claimed by the signed
    commits on main that cite it, pushed with the ref (a mining push)."""
    from gitkb.mine.pipeline import mine
    from gitkb.testing.trace import write_trace

    team.sign_as("carol")
    mine(write_trace(tmp_path / "trace").path, store=team.store, label="softmax-run")
    junk = team.store.repo.write_commit(None, {"kernel.py": b"mine now\n"}, "claim\n")
    # A ref alone, claiming a new label: refused, and the label stays free.
    done = push(team.store, f"{junk}:refs/kb/traces/claimed")
    [line] = gitkb_lines(done)
    assert f"refs/kb/traces/claimed {junk}: claimed: access: " in line, line
    assert "moves only with the commits that cite it" in line
    assert git("for-each-ref", "refs/kb/traces", cwd=team.server).stdout == ""
    # The mining push: records and the trace ref they cite, signed by carol.
    done = push(team.store, "main", "refs/kb/traces/softmax-run")
    assert done.returncode == 0, done.stdout + done.stderr
    # A fast-forward of that ref that nothing on main cites: refused.
    tip = team.store.repo.resolve("refs/kb/traces/softmax-run")
    more = team.store.repo.write_commit(tip, {"kernel.py": b"appended\n"}, "more\n")
    done = push(team.store, f"{more}:refs/kb/traces/softmax-run")
    assert done.returncode != 0 and "softmax-run: access: " in done.stderr, done.stderr
    held = git("rev-parse", "refs/kb/traces/softmax-run", cwd=team.server).stdout.strip()
    assert held == tip


def test_a_revoked_key_signs_no_more_and_what_it_signed_stays_valid(team):
    team.sign_as("carol")
    earlier = team.store.admit(dumps(strategy(2)), "insert").commit
    team.accepted()
    team.sign_as("alice")
    revoked = store_access.revoke(team.store, "carol", dt.datetime.now(dt.UTC)).commit
    team.accepted()
    time.sleep(1.1)  # signatures are checked to the second
    team.sign_as("carol")
    sha = team.store.admit(dumps(strategy(3)), "insert").commit
    team.refused(
        sha,
        "expired key: kb insert needs a contributor's signature (carol's key's window ended at ",
    )
    # carol's earlier commit still verifies against the file as it is now
    now = team.store.repo.read(revoked, "access/allowed_signers")
    raw = {earlier: team.store.repo.raw(earlier)}
    assert signing.verify(raw, now)[earlier].principal == "carol"
    done = kb("validate", "--history", str(team.server))
    assert done.returncode == 0, done.stdout.decode()


def test_a_malformed_allowed_signers_is_refused_naming_its_line(team):
    team.sign_as("alice")
    good = team.store.repo.read(team.store.tip, "access/allowed_signers")
    sha = forge(team.store, {"access/allowed_signers": good + b"eve * ssh-ed25519 AAAA\n"},
                "kb access eve", [("KB-Action", "access"), ("KB-Record", "eve")])  # fmt: skip
    done = push(team.store)
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"gitkb: refs/heads/main {sha}: access/allowed_signers: control: " in output
    assert "access/allowed_signers: line 4: " in output, output


def test_turning_access_on_needs_an_admin_the_anchor_names(tmp_path, monkeypatch):
    put_git_kb_on_path(tmp_path, monkeypatch)
    keys = tmp_path / "keys"
    alice, mallory = make_key(keys, "alice"), make_key(keys, "mallory")
    server = tmp_path / "server.git"
    Store.init(server, bare=True)
    anchor = allowed_signers(tmp_path / "admins", ("alice", alice))
    assert kb("hooks", "install", "--server", str(server), "--admins", str(anchor)).returncode == 0
    assert signing.read_anchor(server).decode().startswith('alice namespaces="git" ssh-ed25519')
    work = tmp_path / "work"
    git("clone", "-q", f"file://{server}", str(work))
    for name, value in (("commit.gpgsign", "true"), ("gpg.format", "ssh"),
                        ("user.signingkey", str(mallory))):  # fmt: skip
        git("config", name, value, cwd=work)
    store = Store.open(work)
    sha = store_access.init(store, "mallory", store_access.key_of(public(mallory), "m")).commit
    done = push(store)
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert (
        f"gitkb: refs/heads/main {sha}: access/allowed_signers: access: unknown key: "
        "turning access on needs an admin's" in output
    )
    assert "judged by the server's anchor (git kb hooks install" in output
    # a store with no anchor at all: nobody turns access on through this server
    bare = tmp_path / "plain.git"
    git("clone", "-q", "--bare", str(server), str(bare))
    assert kb("hooks", "install", "--server", str(bare)).returncode == 0
    done = git("push", "-q", f"file://{bare}", "main", cwd=work, check=False)
    assert "judged by the server's anchor, which names no admin" in done.stderr, done.stderr
    assert Store.open(bare).repo.read(Store.open(bare).tip, "access/allowed_signers") is None
