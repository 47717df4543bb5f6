"""`git kb feedback`: an append-only, union-merged event log, written through the store's one
write path and guarded by the server hook as ledgers are."""

from __future__ import annotations

import json

import pytest
from helpers import example_files, git, kb
from helpers.pushes import forge, push, refused

from gitkb.layout import feedback_path
from gitkb.query.feedback import fold
from gitkb.store import Store

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

RECORD = "nvidia.h100.triton.softmax.online-rescale-two-pass-s01"
SHA = "5d1c0a7e" * 5


def admitted_store(path) -> Store:
    store = Store.init(path)
    for example in example_files():
        store.admit(example.read_bytes(), "insert", source=str(example))
    return store


def give(store: Store, *args: str):
    return kb("feedback", RECORD, "--store", str(store.location), *args)


def test_feedback_appends_one_event_per_key(tmp_path):
    store = admitted_store(tmp_path / "kb")
    done = give(store, "--outcome", "helped", "--trace", "run-1", "--trace-commit", SHA)
    assert done.returncode == 0, done.stderr.decode()
    first = json.loads(done.stdout)
    assert first["action"] == "feedback" and first["commit"]
    log = git("log", "-1", "--format=%B", cwd=store.location).stdout
    assert log.startswith(f"kb feedback {RECORD}\n")
    for trailer in ("KB-Action: feedback", f"KB-Record: {RECORD}", "KB-Outcome: helped",
                    "KB-Trace: run-1", f"KB-Trace-Commit: {SHA}"):  # fmt: skip
        assert trailer in log
    # the same key again: nothing to write, no commit
    again = json.loads(give(store, "--outcome", "helped", "--trace", "run-1",
                            "--trace-commit", SHA).stdout)  # fmt: skip
    assert again["commit"] is None and "already recorded" in again["note"]
    # the same key cannot say something else
    other = give(store, "--outcome", "misleading", "--trace", "run-1", "--trace-commit", SHA)
    assert other.returncode == 1 and b"already says 'helped'" in other.stderr
    # another reporter is another key
    assert give(store, "--outcome", "no-effect", "--by", "Ana <ana@x>").returncode == 0
    raw = store.view().read_files([feedback_path(RECORD)])[feedback_path(RECORD)]
    events = [json.loads(line) for line in raw.splitlines()]
    assert [e["outcome"] for e in events] == ["helped", "no-effect"]
    assert events[1]["key"] == "by:Ana <ana@x>" and events[0]["record_id"] == RECORD
    folded = fold(raw)
    assert folded.counts == {"applied_count": 2, "verified_effective": 1, "verified_ineffective": 1}
    assert (tmp_path / "kb" / feedback_path(RECORD)).read_bytes() == raw  # the work tree follows


def test_bad_feedback_is_one_clear_line(tmp_path):
    store = admitted_store(tmp_path / "kb")
    done = kb("feedback", "no.such.record.at.all", "--outcome", "helped",
              "--store", str(store.location))  # fmt: skip
    assert done.returncode == 1 and b"no record 'no.such.record.at.all'" in done.stderr
    assert give(store, "--outcome", "great").returncode == 2
    lone = give(store, "--outcome", "helped", "--trace", "run-1")
    assert lone.returncode == 2 and b"go together" in lone.stderr
    bad = give(store, "--outcome", "helped", "--trace", "run-1", "--trace-commit", "xyz")
    assert bad.returncode == 2 and b"not a commit id" in bad.stderr
    assert store.log()[0]["action"] == "insert"  # nothing was written


def test_the_server_takes_appends_and_merges_and_refuses_rewrites(server, clone, tmp_path):
    for example in example_files():
        clone.admit(example.read_bytes(), "insert", source=str(example))
    assert push(clone).returncode == 0
    git("clone", "-q", f"file://{server}", str(tmp_path / "other"))
    other = Store.open(tmp_path / "other")
    give(clone, "--outcome", "helped", "--trace", "run-1", "--trace-commit", SHA)
    give(other, "--outcome", "no-effect", "--by", "Ana <ana@x>")
    done = push(clone)
    assert done.returncode == 0, done.stdout + done.stderr
    # the other clone merges (union) and pushes the merge: every line of both kept
    git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=other.location)
    done = push(other)
    assert done.returncode == 0, done.stdout + done.stderr
    git("pull", "-q", "origin", "main", cwd=clone.location)
    path = feedback_path(RECORD)
    rewritten = clone.repo.read(clone.tip, path).replace(b"helped", b"misleading")
    commit = forge(clone, {path: rewritten}, f"kb feedback {RECORD}",
                   [("KB-Action", "feedback"), ("KB-Record", RECORD)])  # fmt: skip
    output = refused(push(clone), server, commit, "feedback")
    assert "lines were changed or removed" in output


def test_concurrent_feedback_merges_by_union(tmp_path):
    seed = admitted_store(tmp_path / "seed")
    remote = tmp_path / "remote.git"
    git("clone", "-q", "--bare", str(seed.location), str(remote))
    clones = []
    for name in ("a", "b"):
        git("clone", "-q", str(remote), str(tmp_path / name))
        clones.append(Store.open(tmp_path / name))
    for clone_store, who in zip(clones, ("box-a", "box-b"), strict=True):
        kb("feedback", RECORD, "--outcome", "helped", "--by", who,
           "--store", str(clone_store.location))  # fmt: skip
    git("push", "-q", "origin", "main", cwd=clones[0].location)
    git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=clones[1].location)
    git("push", "-q", "origin", "main", cwd=clones[1].location)
    merged = Store.open(remote)
    assert len(merged.repo.commit(merged.tip).parents) == 2
    raw = merged.view().read_files([feedback_path(RECORD)])[feedback_path(RECORD)]
    assert sorted(json.loads(line)["by"] for line in raw.splitlines()) == ["box-a", "box-b"]
    assert fold(raw).counts["verified_effective"] == 2
