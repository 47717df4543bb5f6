"""Merges a forge's merge button makes: unsigned, or signed with the forge's own OpenPGP
key, never with a contributor's SSH key. A merge that adds nothing of its own lands on
what it brings, each brought commit signed by one whom the merge's first parent's rules
give the role its change needs; a merge with a change of its own needs that change's role,
signed on the merge. Each verdict is the push's (file://), ``git kb check``'s and
``validate --history``'s."""

from __future__ import annotations

import json

import pytest
from helpers import git, kb
from helpers.records import strategy
from helpers.signing import needs_ssh_keygen, pgp_signed
from helpers.teams import Team

from gitkb.layout import BRANCH
from gitkb.record import dumps, path_for
from gitkb.store import Store
from gitkb.store import access as store_access
from gitkb.warmstart.attest import attest
from gitkb.warmstart.retract import retract

pytestmark = [needs_ssh_keygen, pytest.mark.slow]


def branch_off(team: Team, side: str) -> str:
    """Leave main's commits since origin/main on branch ``side``; main goes back to
    origin/main. Returns where the branch was cut."""
    git("branch", "-f", side, "main", cwd=team.work)
    git("reset", "-q", "--hard", "origin/main", cwd=team.work)
    return git("rev-parse", "main", cwd=team.work).stdout.strip()


def merge_unsigned(team: Team, side: str, *extra: str) -> str:
    """``git merge --no-ff`` of ``side`` into main, unsigned (a forge's merge commit)."""
    git("-c", "commit.gpgsign=false", "merge", "-q", "--no-ff", "--no-edit", *extra, side,
        cwd=team.work)  # fmt: skip
    return git("rev-parse", "main", cwd=team.work).stdout.strip()


def check(team: Team):
    return kb("check", "origin/main..main", "--store", str(team.work))


def access_lines(output: str, commit: str) -> list[str]:
    """The access findings about ``commit`` in a push's, a check's or a replay's output,
    from the file they name on."""
    return sorted(
        line.split(f"{commit[:12]}", 1)[1].split(" ", 1)[1]
        for line in output.splitlines()
        if commit[:12] in line and ": access: " in line
    )


def test_a_merge_that_adds_nothing_lands_on_what_it_brings(team):
    # The side branch: carol's insert, carol's attest, bob's (a curator's) retraction.
    team.sign_as("carol")
    team.store.admit(dumps(strategy(2)), "insert")
    attest(team.store, team.record["id"], "validated", by="box")
    team.sign_as("bob")
    retract(team.store, team.record["id"], "not reproduced")
    branch_off(team, "side")
    # main moves on meanwhile: both append to the record's ledger (merged by union).
    team.sign_as("carol")
    attest(team.store, team.record["id"], "failed", by="rig")
    team.store.admit(dumps(strategy(3)), "insert")
    team.accepted()
    merge = merge_unsigned(team, "side")
    ledger = git("show", f"main:ledger/{team.record['id']}.jsonl", cwd=team.work).stdout
    assert '"validated"' in ledger and '"failed"' in ledger, "the ledger merged by union"
    done = check(team)
    assert done.returncode == 0, done.stdout.decode()
    team.accepted()
    assert git("rev-parse", "main", cwd=team.server).stdout.strip() == merge
    for repo in (team.server, team.work):
        done = kb("validate", "--history", str(repo))
        assert done.returncode == 0, done.stdout.decode()

    # The same with the forge's own OpenPGP signature on the merge.
    team.store.admit(dumps(strategy(4)), "insert")
    branch_off(team, "side")
    team.store.admit(dumps(strategy(5)), "insert")
    signed = pgp_signed(team.work, merge_unsigned(team, "side"))
    git("update-ref", BRANCH, signed, cwd=team.work)
    assert check(team).returncode == 0
    team.accepted()
    assert kb("validate", "--history", str(team.server)).returncode == 0
    assert Store.open(team.server).view().entry(team.record["id"])["status"] == "deprecated"


def test_a_merge_s_own_change_or_a_role_revoked_since_is_refused(team):
    # A change of its own: a record's status flipped while merging carol's insert.
    team.sign_as("carol")
    team.store.admit(dumps(strategy(2)), "insert")
    branch_off(team, "side")
    merge_unsigned(team, "side", "--no-commit")
    where = team.work / path_for(team.record)
    record = json.loads(where.read_text())
    record["status"] = "deprecated"
    where.write_text(dumps(record).decode())
    git("-c", "commit.gpgsign=false", "commit", "-qam", "Merge branch 'side'", cwd=team.work)
    merge = git("rev-parse", "main", cwd=team.work).stdout.strip()
    words = "unsigned: a merge bringing a retraction or its lifting"
    judged(team, merge, f"{path_for(team.record)}: access: {words}")

    # A contributor's retraction brought in (refused on its own too).
    team.sign_as("carol")
    retracted = retract(team.store, team.record["id"], "I say so").commit
    branch_off(team, "side")
    merge = merge_unsigned(team, "side")
    words = f"carol: kb retract ({retracted[:12]}, brought in by a merge) needs a curator's"
    judged(team, merge, words)

    # A curator's retraction, merged after main took bob's role away.
    team.sign_as("bob")
    retracted = retract(team.store, team.record["id"], "not reproduced").commit
    branch_off(team, "side")
    team.sign_as("alice")
    store_access.add(team.store, "bob", team.key("bob"), "contributor")
    team.accepted()
    demoted = git("rev-parse", "main", cwd=team.work).stdout.strip()
    merge = merge_unsigned(team, "side")
    words = (
        f"bob: kb retract ({retracted[:12]}, brought in by a merge) needs a curator's signature "
        f"(bob is a contributor; judged by access/allowed_signers at {demoted[:12]})"
    )
    judged(team, merge, words)


def judged(team: Team, merge: str, words: str) -> None:
    """``validate --history`` on the clone, ``git kb check`` and the push each refuse
    ``merge`` with one access line saying ``words``; the clone goes back to the server's."""
    replayed = kb("validate", "--history", str(team.work)).stdout.decode()
    checked = check(team)
    assert checked.returncode == 1
    line = team.refused(merge, words)
    assert access_lines(replayed, merge) == access_lines(checked.stdout.decode(), merge)
    assert access_lines(replayed, merge) == [line.split(f"{merge}: ", 1)[1]], (replayed, line)


def test_a_merge_of_commits_that_rode_in_under_a_trace_ref_is_judged_on_them(team):
    """A contributor's retraction, parked under a trace ref (trace commits are no store
    commits: the push that brings them judges none of them) beside an attest that cites
    it, then brought onto main by an unsigned merge that adds nothing of its own: the
    merge brings that retraction, so it answers to the curator's role all the same."""
    team.sign_as("carol")
    retracted = retract(team.store, team.record["id"], "I say so").commit
    branch_off(team, "side")
    attest(team.store, team.record["id"], "validated", by="box")
    message = git("log", "-1", "--format=%B", "main", cwd=team.work).stdout.rstrip("\n")
    cites = f"{message}\nKB-Trace: parked\nKB-Trace-Commit: {retracted}\n"
    git("commit", "-q", "--amend", "-S", "-F", "-", cwd=team.work, input=cites)
    done = git("push", "-q", "origin", "main", f"{retracted}:refs/kb/traces/parked",
               cwd=team.work, check=False)  # fmt: skip
    if done.returncode == 0:  # the server took the parked commit: the merge must not
        git("fetch", "-q", "origin", cwd=team.work)
        merge = merge_unsigned(team, "side")
        words = f"carol: kb retract ({retracted[:12]}, brought in by a merge) needs a curator's"
        judged(team, merge, words)
    else:
        assert "pre-receive hook declined" in done.stderr, done.stderr
