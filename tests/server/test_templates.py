"""A copied starting state (helpers/templates.py) behaves as the state built afresh: the
copy's clone pushes to the copy's server, whose hook takes a good push and refuses a bad
one, a copied team signs with the copy's keys, no file of a copy names the template's
folder, and the template is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git
from helpers.pushes import forge, push, record_edits, refused
from helpers.signing import needs_ssh_keygen
from helpers.templates import built

from gitkb import record as rec
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # pushes through the hook


def naming(folder: Path, text: str) -> list[Path]:
    """The files under ``folder`` whose bytes hold ``text`` (SQLite caches included)."""
    return [p for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def pushes_as_a_fresh_pair(server, clone, tmp_path, state: str) -> None:
    """The copy of the pushed ``state``: its clone's origin is the copy's server, no file
    names the template, a good push lands, a bad one is refused, the template stays."""
    source = built(state)
    template_main = git("rev-parse", "main", cwd=source / "server.git").stdout
    assert git("config", "remote.origin.url", cwd=clone.location).stdout.strip() == (
        f"file://{server}"
    )
    assert naming(tmp_path, str(source)) == []

    clone.admit(rec.dumps(synthetic.strategy(2)), "insert")
    done = push(clone)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip

    bad = synthetic.strategy(3)
    bad["level"] = "kernel"
    commit = forge(clone, record_edits({rec.path_for(bad): bad}), f"kb insert {bad['id']}",
                   [("KB-Action", "insert"), ("KB-Record", bad["id"])])  # fmt: skip
    refused(push(clone), server, commit, "schema")
    assert git("rev-parse", "main", cwd=source / "server.git").stdout == template_main


def test_a_copied_held_server_and_clone_push_as_a_fresh_pair(server, clone, held, tmp_path):
    pushes_as_a_fresh_pair(server, clone, tmp_path, "held")


def test_a_copied_examples_server_and_clone_push_as_a_fresh_pair(server, clone, examples, tmp_path):
    pushes_as_a_fresh_pair(server, clone, tmp_path, "examples")


def test_a_copied_server_takes_a_fresh_clone(server, clone, tmp_path):
    assert not (built("server") / "work").exists()
    assert naming(tmp_path, str(built("server"))) == []
    clone.admit(rec.dumps(synthetic.strategy(1)), "insert")
    done = push(clone)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip


@needs_ssh_keygen
def test_a_copied_team_signs_with_the_copy_s_keys(team, tmp_path):
    assert naming(tmp_path, str(built("team"))) == []
    assert git("config", "user.signingkey", cwd=team.work).stdout.strip() == str(
        tmp_path / "signing-keys" / "carol"
    )
    team.store.admit(rec.dumps(synthetic.strategy(2)), "insert")
    team.accepted()
    team.sign_as("mallory")
    sha = team.store.admit(rec.dumps(synthetic.strategy(3)), "insert").commit
    team.refused(sha, "unknown key: kb insert needs a contributor's signature")
