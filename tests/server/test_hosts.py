"""Who the host says pushed: a web server's basic auth hands git http-backend (and so
gitkb's hook) ``REMOTE_USER``; the host decides who may push at all, and gitkb names the
pusher in the refusal log it keeps in the server's git directory."""

from __future__ import annotations

import pytest
from helpers import git
from helpers.pushes import forge_edit, gitkb_lines, has_object, push
from helpers.servers import Remote, git_daemon, http_remote, push_to, smart_http

from gitkb import record as rec
from gitkb.testing import synthetic
from gitkb.vcs.receiving import refusals
from gitkb.vcs.repository import Repository

pytestmark = pytest.mark.slow  # real pushes into a hooked server: seconds

USERS = {"carol": "s3cret"}


def test_smart_http_with_basic_auth_names_remote_user_in_the_refusal_log(server, clone,
                                                                         tmp_path):  # fmt: skip
    record = synthetic.strategy(1)
    clone.admit(rec.dumps(record), "insert")
    with smart_http(tmp_path, tmp_path, USERS) as base_url:
        url = f"{base_url}/server.git"
        anonymous = push_to(clone.location, Remote(url))
        assert anonymous.returncode != 0 and "Username" in anonymous.stderr, anonymous.stderr
        assert not has_object(server, clone.tip), "the web server refuses before git runs"
        wrong = push_to(clone.location, http_remote(url, "carol", "guess"))
        assert wrong.returncode != 0

        carol = http_remote(url, "carol", USERS["carol"])
        done = push_to(clone.location, carol)
        assert done.returncode == 0, done.stdout + done.stderr
        commit = forge_edit(clone, record)
        done = push_to(clone.location, carol)
    [line] = gitkb_lines(done)
    assert f"gitkb: refs/heads/main {commit}: {record['id']}: history: " in line
    [logged] = refusals(Repository.open(server))
    assert (logged.pusher, logged.via) == ("carol", "REMOTE_USER")
    assert logged.problems == (line.split("gitkb: ", 1)[1].rstrip(),)


def test_a_push_over_file_names_no_pusher(server, clone):
    record = synthetic.strategy(1)
    clone.admit(rec.dumps(record), "insert")
    assert push(clone).returncode == 0
    forge_edit(clone, record)
    assert push(clone).returncode != 0
    assert push(clone).returncode != 0
    logged = refusals(Repository.open(server))
    assert [(r.pusher, r.via) for r in logged] == [(None, None), (None, None)]
    assert logged[0].at.endswith("Z") and logged[0].problems == logged[1].problems
    assert git("rev-parse", "main", cwd=server).stdout.strip() != clone.tip


def test_an_edit_of_an_admitted_record_is_refused_alike_over_every_transport(server, clone,
                                                                             hosted):  # fmt: skip
    record = synthetic.strategy(1)
    clone.admit(rec.dumps(record), "insert")
    alice = hosted.remote("alice")
    done = push_to(clone.location, alice)
    assert done.returncode == 0, done.stdout + done.stderr

    commit = forge_edit(clone, record)
    done = push_to(clone.location, alice)
    assert done.returncode != 0
    [line] = gitkb_lines(done)
    said = line.split("gitkb: ", 1)[1].rstrip()
    path = rec.path_for(record)
    assert said == (
        f"refs/heads/main {commit}: {record['id']}: history: "
        f"kb insert may not change {path} (a record file)"
    )
    assert not has_object(server, commit)
    [logged] = refusals(Repository.open(server))
    pusher = "alice" if hosted.via else None
    assert (logged.pusher, logged.via, logged.problems) == (pusher, hosted.via, (said,))


def test_a_git_without_its_daemon_skips_the_daemon_s_tests(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_EXEC_PATH", str(tmp_path))  # a git whose programs hold no daemon
    with pytest.raises(pytest.skip.Exception, match="git daemon is not installed"):
        git_daemon(tmp_path)
