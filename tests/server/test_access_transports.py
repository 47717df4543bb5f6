"""Over file://, git daemon, smart HTTP and ssh through gitolite3: a contributor's signed
insert lands, and each access attack is refused by the same one line, the very line
``git kb check`` gives the range before the push (as a forge's pull-request check)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

import pytest
from helpers import git, kb
from helpers.pushes import forge, record_edits
from helpers.records import strategy
from helpers.servers import TRANSPORTS, Host, hosting, push_to
from helpers.signing import needs_ssh_keygen
from helpers.teams import Team

from gitkb.layout import BRANCH
from gitkb.record import dumps, path_for
from gitkb.store import access as store_access
from gitkb.warmstart.attest import attest
from gitkb.warmstart.retract import retract

pytestmark = [needs_ssh_keygen, pytest.mark.slow]


def unsigned(team: Team) -> str:
    team.sign_as(None)  # gitkb's writers refuse to write so: a hand-made commit
    record = strategy(2)
    forge(team.store, record_edits({path_for(record): record}), f"kb insert {record['id']}",
          [("KB-Action", "insert"), ("KB-Record", record["id"])])  # fmt: skip
    return "unsigned: kb insert needs a contributor's signature"


def unknown_key(team: Team) -> str:
    team.sign_as("mallory")
    team.store.admit(dumps(strategy(2)), "insert")
    return "unknown key: kb insert needs a contributor's"


def contributor_retract(team: Team) -> str:
    team.sign_as("carol")
    retract(team.store, team.record["id"], "I say so")
    return "carol: kb retract needs a curator's signature"


def contributor_curate(team: Team) -> str:
    team.sign_as("carol")
    for _ in range(2):
        attest(team.store, team.record["id"], "not_reproduced", by="box")
    done = kb("curate", "--retire", "--apply", "--store", str(team.work))
    assert done.returncode == 0, done.stderr.decode()
    return "carol: kb retract needs a curator's"


def contributor_makes_self_admin(team: Team) -> str:
    team.sign_as("carol")
    store_access.add(team.store, "carol", team.key("carol"), "admin")
    return "carol: kb access needs an admin's signature"


def key_added_and_used(team: Team) -> str:
    team.sign_as("mallory")
    store_access.add(team.store, "mallory", team.key("mallory"), "admin")
    return "unknown key: kb access needs an admin's"


def merge_bringing_a_retract(team: Team) -> str:
    """A merge that adds nothing of its own lands on what it brings: here a contributor's
    retraction (a curator's would land)."""
    base = team.store.tip
    team.sign_as("carol")
    retracted = retract(team.store, team.record["id"], "I say so").commit
    git("branch", "-f", "side", retracted, cwd=team.work)
    git("reset", "-q", "--hard", base, cwd=team.work)
    team.store.admit(dumps(strategy(2)), "insert")
    git("merge", "-q", "--no-edit", "side", cwd=team.work)
    return f"carol: kb retract ({retracted[:12]}, brought in by a merge) needs a curator's"


def admin_commit_replayed(team: Team) -> str:
    base = team.store.tip
    team.sign_as("alice")
    admin_commit = store_access.add(team.store, "dave", team.key("mallory"), "admin").commit
    git("reset", "-q", "--hard", base, cwd=team.work)
    team.sign_as("carol")
    other = team.store.admit(dumps(strategy(2)), "insert").commit
    raw = git("cat-file", "commit", admin_commit, cwd=team.work).stdout
    moved = raw.replace(f"parent {base}", f"parent {other}")
    replayed = git("hash-object", "-w", "-t", "commit", "--stdin", cwd=team.work, input=moved)
    git("update-ref", BRANCH, replayed.stdout.strip(), cwd=team.work)
    return "bad signature: kb access needs an admin's"


def tampered(team: Team) -> str:
    team.sign_as("carol")
    signed = team.store.admit(dumps(strategy(3)), "insert").commit
    raw = git("cat-file", "commit", signed, cwd=team.work).stdout
    forged = raw.replace("\n\nkb insert", "\n\nkb  insert", 1)
    made = git("hash-object", "-w", "-t", "commit", "--stdin", cwd=team.work, input=forged)
    git("update-ref", BRANCH, made.stdout.strip(), cwd=team.work)
    return "bad signature: kb insert needs a contributor's"


def malformed_signers(team: Team) -> str:
    team.sign_as("alice")
    good = team.store.repo.read(team.store.tip, "access/allowed_signers")
    forge(team.store, {"access/allowed_signers": good + b"eve * ssh-ed25519 AAAA\n"},
          "kb access eve", [("KB-Action", "access"), ("KB-Record", "eve")])  # fmt: skip
    return "access/allowed_signers: line 4: "


def revoked_key(team: Team) -> str:
    """Last: it moves the server's main (alice revokes carol)."""
    team.sign_as("alice")
    store_access.revoke(team.store, "carol", dt.datetime.now(dt.UTC))
    team.accepted()
    time.sleep(1.1)  # signatures are checked to the second
    team.sign_as("carol")
    team.store.admit(dumps(strategy(4)), "insert")
    return "expired key: kb insert needs a contributor's"


ATTACKS: tuple[Callable[[Team], str], ...] = (
    unsigned, unknown_key, contributor_retract, contributor_curate,
    contributor_makes_self_admin, key_added_and_used, merge_bringing_a_retract,
    admin_commit_replayed, tampered, malformed_signers, revoked_key,
)  # fmt: skip


def judged(team: Team, host: Host, attack: Callable[[Team], str]) -> None:
    """``git kb check`` refuses the attack's range with a line saying ``words``; the push
    over ``host`` is refused with that very line; the clone goes back to the server's."""
    words = attack(team)
    checked = kb("check", "origin/main..main", "--store", str(team.work))
    check_lines = [ln for ln in checked.stdout.decode().splitlines() if words in ln]
    assert checked.returncode == 1 and len(check_lines) == 1, (attack.__name__, checked)
    pushed = push_to(team.work, host.remote())
    output = pushed.stdout + pushed.stderr
    hook_lines = [ln.removeprefix("remote: ").rstrip() for ln in output.splitlines()
                  if ln.startswith("remote: gitkb: ") and words in ln]  # fmt: skip
    assert pushed.returncode != 0, (attack.__name__, output)
    assert hook_lines == check_lines, (attack.__name__, hook_lines, check_lines)
    git("reset", "-q", "--hard", "origin/main", cwd=team.work)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_attack_is_refused_over_every_transport_and_by_the_check(transport, team, tmp_path):
    with hosting(transport, team.server, tmp_path) as host:
        team.remote = host.remote()  # gitolite's own update hook refuses file:// pushes
        team.sign_as("carol")  # a contributor's signed insert lands
        team.store.admit(dumps(strategy(5)), "insert")
        team.accepted()
        before = git("rev-parse", "main", cwd=team.server).stdout.strip()
        for attack in ATTACKS[:-1]:
            judged(team, host, attack)
        assert git("rev-parse", "main", cwd=team.server).stdout.strip() == before
        judged(team, host, ATTACKS[-1])
