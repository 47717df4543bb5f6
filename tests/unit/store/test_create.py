"""A store gitkb writes is an ordinary git repository to C git."""

from __future__ import annotations

import pytest
from helpers import example_files, git

from gitkb.record import dumps
from gitkb.store import Store
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def test_push_clone_fsck_and_trailers(tmp_path):
    store = Store.init(tmp_path / "kb")
    for path in example_files():
        store.admit(path.read_bytes(), "insert", trace="example-trace", trace_commit="b" * 40)
    store.admit(
        dumps(synthetic.strategy(9)), "confirm", target=store.list(type="strategy")[0]["id"]
    )
    server = tmp_path / "server.git"
    git("init", "-q", "--bare", str(server))
    git("push", "-q", str(server), "main", cwd=tmp_path / "kb")
    clone = tmp_path / "clone"
    git("clone", "-q", str(server), str(clone))
    assert git("fsck", "--strict", "--no-dangling", cwd=clone).stderr == ""
    assert git("fsck", "--strict", "--no-dangling", cwd=tmp_path / "kb").stderr == ""
    log = git(
        "log", "--format=%H %(trailers:key=KB-Action,valueonly,separator=)", cwd=clone
    ).stdout.split("\n")
    actions = [line.split(" ", 1)[1] for line in log if line]
    assert actions == ["confirm", "insert", "insert", "insert", "insert", "init"]
    # C git parses exactly the trailers gitkb wrote, on every commit
    for sha in git("rev-list", "main", cwd=clone).stdout.split():
        body = git("log", "-1", "--format=%B", sha, cwd=clone).stdout
        c_git = [
            tuple(line.split(": ", 1))
            for line in git("interpret-trailers", "--parse", input=body).stdout.splitlines()
        ]
        assert c_git == store.repo.commit(sha).trailers
    # the clone opens as a store and holds the same records
    assert [e["id"] for e in Store.open(clone).list()] == [e["id"] for e in store.list()]


def test_store_reads_what_c_git_commits(tmp_path):
    """A human commit made with C git in the store's work tree is seen by gitkb."""
    store = Store.init(tmp_path / "kb")
    record = synthetic.strategy(4)
    store.admit(dumps(record), "insert")
    (tmp_path / "kb" / "NOTES.md").write_text("reviewer notes\n")
    git("add", "NOTES.md", cwd=tmp_path / "kb")
    git("commit", "-qm", "notes", cwd=tmp_path / "kb")
    store.admit(dumps(synthetic.strategy(5)), "insert")
    assert store.repo.read(store.tip, "NOTES.md") == b"reviewer notes\n"
    assert git("status", "--porcelain", cwd=tmp_path / "kb").stdout == ""
