"""The server's bounds on one push (``[server]`` in gitkb.toml, as main held it before the
push): each, when a real push goes over it, refuses the push in one ``gitkb:`` line naming
the setting, and the server keeps none of the pushed objects."""

from __future__ import annotations

import shutil
import time

import pytest
from helpers import git
from helpers.pushes import forge_config, gitkb_lines, has_object, push
from helpers.signing import needs_ssh_keygen

from gitkb import record as rec
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # real pushes into a hooked server: seconds


def bounded(server, clone, settings: str) -> None:
    """Land a config commit setting ``settings`` under [server]."""
    forge_config(clone, f"[server]\n{settings}\n")
    done = push(clone)
    assert done.returncode == 0, done.stdout + done.stderr


def admit(clone, *numbers: int) -> None:
    for n in numbers:
        clone.admit(rec.dumps(synthetic.strategy(n)), "insert")


def over_bound(done, server, tip: str, setting: str) -> str:
    assert done.returncode != 0, done.stdout + done.stderr
    [line] = gitkb_lines(done)
    assert f"gitkb: refs/heads/main {tip}: -: bounds: " in line, line
    assert f"[server] {setting}" in line and "push it in parts" in line, line
    assert not has_object(server, tip), "a refused push leaves no objects on the server"
    return line


def test_commits_per_push(server, clone):
    bounded(server, clone, "max_push_commits = 2")
    admit(clone, 1, 2, 3)
    line = over_bound(push(clone), server, clone.tip, "max_push_commits")
    assert "more than 2 commits" in line
    assert push(clone, "HEAD~1:main").returncode == 0, "two commits are within the bound"
    assert push(clone).returncode == 0


def test_records_per_push(server, clone):
    bounded(server, clone, "max_push_records = 2")
    admit(clone, 1, 2, 3)
    line = over_bound(push(clone), server, clone.tip, "max_push_records")
    assert "more than 2 record files" in line
    assert push(clone, "HEAD~1:main").returncode == 0


def test_push_size(server, clone):
    bounded(server, clone, "max_push_bytes = 200")
    admit(clone, 1)
    line = over_bound(push(clone), server, clone.tip, "max_push_bytes")
    assert "bytes of objects, over the store's [server] max_push_bytes of 200" in line


def test_hook_wall_time(server, clone):
    bounded(server, clone, "hook_seconds = 0.001")
    admit(clone, 1)
    line = over_bound(push(clone), server, clone.tip, "hook_seconds")
    assert "checking the push took over 0.001 s" in line


@needs_ssh_keygen
def test_hook_wall_time_bounds_the_signature_check(team, tmp_path, monkeypatch):
    """The hook's wall time holds inside a step too: a signature check that would run
    past it (ssh-keygen slowed to a minute here) is stopped there, with the bound's line."""
    team.sign_as("alice")  # an admin: [server] is a control file's
    forge_config(team.store, "[server]\nhook_seconds = 3\n")
    team.accepted()
    team.sign_as("carol")
    team.store.admit(rec.dumps(synthetic.strategy(2)), "insert")
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "ssh-keygen").write_text(
        f'#!/bin/sh\ncase "$*" in *"-Y verify"*|*check-novalidate*) sleep 60;; esac\n'
        f'exec {shutil.which("ssh-keygen")} "$@"\n'
    )
    (slow / "ssh-keygen").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}:{tmp_path / 'bin'}:/usr/bin:/bin")
    started = time.monotonic()
    line = over_bound(push(team.store), team.server, team.store.tip, "hook_seconds")
    assert "checking the push took over 3 s" in line
    assert time.monotonic() - started < 30, "stopped at the bound, not after the minute"


def test_the_pushed_config_binds_from_the_next_push(server, clone):
    """A push that lowers a bound is judged by the bounds main held before it."""
    admit(clone, 1, 2)
    forge_config(clone, "[server]\nmax_push_commits = 1\n")
    done = push(clone)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip
    admit(clone, 3, 4)
    over_bound(push(clone), server, clone.tip, "max_push_commits")


def test_a_bound_the_server_cannot_read_is_refused(server, clone):
    forge_config(clone, "[server]\nmax_push_commits = 0\n")
    done = push(clone)
    [line] = gitkb_lines(done)
    assert ": control: gitkb.toml: [server] max_push_commits must be a positive integer" in line
