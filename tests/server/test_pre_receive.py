"""The server hook: real `git push` with C git into a bare store whose pre-receive hook
was installed by `git kb hooks install --server`, over file:// and over git daemon."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from helpers import example_files, git, kb, put_git_kb_on_path
from helpers.pushes import admit_examples, forge, has_object, push, record_edits, refused
from helpers.servers import git_daemon, smart_http

from gitkb import record as rec
from gitkb.gates.registry import record_level
from gitkb.hooks import local as hooks
from gitkb.record.index import INDEX_PATH
from gitkb.store import Store
from gitkb.testing import synthetic
from gitkb.testing.injections import example_context
from gitkb.vcs.repository import ZERO_SHA, Repository

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

STORE_GATES = [g for g in record_level() if g.family == "store"]


# --------------------------------------------------------------------------- good pushes


@pytest.mark.parametrize("transport", ["git-daemon", "smart-http"])
def test_good_pushes_land_and_bad_ones_are_refused(server, clone, tmp_path, transport):
    """Over file://, then over git daemon or smart HTTP (git http-backend behind lighttpd)."""
    git("config", "http.receivepack", "true", cwd=server)
    admit_examples(clone)
    done = push(clone)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip

    clone.admit(rec.dumps(synthetic.strategy(7)), "insert")
    serve = git_daemon(tmp_path) if transport == "git-daemon" else smart_http(tmp_path, tmp_path)
    with serve as base_url:
        done = push(clone, url=f"{base_url}/server.git")
        assert done.returncode == 0, done.stdout + done.stderr
        assert git("rev-parse", "main", cwd=server).stdout.strip() == clone.tip

        bad = synthetic.strategy(8)
        bad["level"] = "kernel"
        commit = forge(
            clone,
            record_edits({rec.path_for(bad): bad}),
            f"kb insert {bad['id']}",
            [("KB-Action", "insert"), ("KB-Record", bad["id"])],
        )
        refused(push(clone, url=f"{base_url}/server.git"), server, commit, "schema")


def test_first_push_into_an_empty_bare_repository(tmp_path, monkeypatch):
    put_git_kb_on_path(tmp_path, monkeypatch)
    git("init", "-q", "--bare", str(tmp_path / "empty.git"))
    assert kb("hooks", "install", "--server", str(tmp_path / "empty.git")).returncode == 0
    local = Store.init(tmp_path / "local")
    admit_examples(local)
    git("remote", "add", "origin", str(tmp_path / "empty.git"), cwd=local.location)
    done = push(local)
    assert done.returncode == 0, done.stdout + done.stderr

    other = Store.init(tmp_path / "other")
    bad = copy.deepcopy(json.loads(example_files()[0].read_bytes()))
    bad["payload"]["mechanism"] = "see /home/alice/kernels/x.py"
    commit = forge(
        other,
        record_edits({rec.path_for(bad): bad}),
        f"kb insert {bad['id']}",
        [("KB-Action", "insert"), ("KB-Record", bad["id"])],
    )
    git("init", "-q", "--bare", str(tmp_path / "empty2.git"))
    assert kb("hooks", "install", "--server", str(tmp_path / "empty2.git")).returncode == 0
    done = push(other, "main", url=str(tmp_path / "empty2.git"))
    refused(done, tmp_path / "empty2.git", commit, "anonymization")


# --------------------------------------------------------------------------- store gates


def injected_records(gate) -> dict[str, rec.RecordFile]:
    """Record files a gate's first applicable injection case changes or adds in the shipped
    sample, as path -> file; the gate is confirmed to fire on the mutated sample."""
    for case in gate.injections:
        ctx = example_context()
        before = {r.path: copy.deepcopy(r.data) for r in ctx.records}
        if not case.mutate(ctx) or not gate.run(ctx).findings:
            continue
        changed = {
            r.path: r
            for r in ctx.records
            if r.path not in before or r.data is None or r.data != before[r.path]
        }
        if changed:
            return changed
    pytest.skip(f"no injection case of {gate.name} changes a record file")


@pytest.mark.parametrize("gate", STORE_GATES, ids=[g.name for g in STORE_GATES])
def test_each_store_gate_defect_is_refused(server, clone, examples, gate):
    changed = injected_records(gate)
    edits: dict = {}
    for path, record_file in changed.items():
        edits[path] = record_file.raw if record_file.data is None else rec.dumps(record_file.data)
    # A bulk action, so that only the gate (not the trailer rule) can object.
    commit = forge(clone, edits, "kb import injected", [("KB-Action", "import")])
    refused(push(clone), server, commit, gate.name)


# --------------------------------------------------------------------------- trailers, index


def test_forged_trailer_is_refused(server, clone):
    record = synthetic.strategy(11)
    other = synthetic.strategy(12)["id"]
    commit = forge(
        clone,
        record_edits({rec.path_for(record): record}),
        f"kb insert {other}",
        [("KB-Action", "insert"), ("KB-Record", other)],
    )
    output = refused(push(clone), server, commit, "trailers")
    assert f"{record['id']}: trailers: changed by a commit whose KB-Record names {other}" in output


def test_subject_and_trailers_must_agree(server, clone):
    record = synthetic.strategy(13)
    commit = forge(
        clone,
        record_edits({rec.path_for(record): record}),
        f"kb confirm {record['id']}",
        [("KB-Action", "insert"), ("KB-Record", record["id"])],
    )
    refused(push(clone), server, commit, "commit-msg")


def test_record_change_without_kb_action_is_refused(server, clone):
    record = synthetic.strategy(14)
    commit = forge(clone, record_edits({rec.path_for(record): record}), "add a record", [])
    output = refused(push(clone), server, commit, "trailers")
    assert "carries no KB-Action trailer" in output


def test_conflict_and_ledger_files_need_trailers_too(server, clone):
    commit = forge(clone, {"ledger/a.b.c.d.e.jsonl": b"{}\n"}, "note", [])
    output = refused(push(clone), server, commit, "trailers")
    assert "a.b.c.d.e: trailers: changes ledger/a.b.c.d.e.jsonl" in output


def test_a_committed_index_is_refused(server, clone):
    """Store format 2: records/index.json is derived data and never enters history."""
    record = synthetic.strategy(15)
    path = rec.path_for(record)
    commit = forge(
        clone,
        {path: rec.dumps(record), INDEX_PATH: clone.index_file()},
        f"kb insert {record['id']}",
        [("KB-Action", "insert"), ("KB-Record", record["id"])],
    )
    output = refused(push(clone), server, commit, "index")
    assert "derived data and stays out of history" in output


def test_id_taken_at_another_path_is_refused(server, clone):
    record = synthetic.strategy(17)
    clone.admit(rec.dumps(record), "insert")
    assert push(clone).returncode == 0
    first = clone.tip
    elsewhere = "records/strategy/moved/" + rec.path_for(record).rsplit("/", 1)[1]
    commit = forge(
        clone,
        {elsewhere: rec.dumps(record)},
        f"kb insert {record['id']}",
        [("KB-Action", "insert"), ("KB-Record", record["id"])],
    )
    output = refused(push(clone), server, commit, "ids")
    # One line naming both commits and the way out.
    assert f"admitted by {first[:12]}" in output and f"{commit[:12]} admits it again" in output
    assert f"git kb renumber {record['id']}" in output


def test_main_is_append_only(server, clone, examples):
    first = clone.repo.commit(clone.tip).parents[0]
    git("update-ref", "refs/heads/main", first, cwd=clone.location)
    output = push(clone, "+main")
    assert output.returncode != 0 and ": -: history: not a fast-forward" in output.stderr
    deleted = push(clone, ":main")
    assert deleted.returncode != 0 and "the records branch cannot be deleted" in deleted.stderr


# --------------------------------------------------------------------------- trace refs


def test_trace_refs_are_only_created_or_fast_forwarded(tmp_path, monkeypatch):
    put_git_kb_on_path(tmp_path, monkeypatch)
    server = tmp_path / "server.git"
    Store.init(server, bare=True)
    git("clone", "-q", str(server), str(tmp_path / "work"))
    work = Store.open(tmp_path / "work")
    v0 = work.repo.write_commit(None, {"kernel.py": b"v0\n"}, "v0\n")
    v1 = work.repo.write_commit(v0, {"kernel.py": b"v1\n"}, "v1\n")
    work.repo.update_ref("refs/kb/traces/x", None, v1)
    record = synthetic.strategy(20)
    record["evidence"]["raw"]["source_repo"] = "x"
    forge(
        work,
        record_edits({rec.path_for(record): record}),
        f"kb insert {record['id']}",
        [("KB-Action", "insert"), ("KB-Record", record["id"])],
    )
    # The cited trace lands before the hook exists: the trace gates are not under test here.
    assert push(work, "main", "refs/kb/traces/x").returncode == 0
    assert kb("hooks", "install", "--server", str(server)).returncode == 0

    deleted = push(work, ":refs/kb/traces/x")
    assert deleted.returncode != 0
    line = f"gitkb: refs/kb/traces/x {ZERO_SHA}: x: trace-refs: refs/kb/traces/x cannot be deleted"
    assert line in deleted.stderr, deleted.stderr
    assert git("rev-parse", "refs/kb/traces/x", cwd=server).stdout.strip() == v1

    rewritten = work.repo.write_commit(v0, {"kernel.py": b"v1, rewritten\n"}, "v1 again\n")
    git("update-ref", "refs/kb/traces/x", rewritten, cwd=work.location)
    done = push(work, "+refs/kb/traces/x")
    assert done.returncode != 0 and "cannot be rewritten" in done.stderr
    assert not has_object(server, rewritten)

    v2 = work.repo.write_commit(v1, {"kernel.py": b"v2\n"}, "v2\n")
    git("update-ref", "refs/kb/traces/x", v2, cwd=work.location)
    assert push(work, "refs/kb/traces/x").returncode == 0

    y = work.repo.write_commit(None, {"kernel.py": b"y\n"}, "y\n")
    work.repo.update_ref("refs/kb/traces/y", None, y)
    assert push(work, "refs/kb/traces/y").returncode == 0
    uncited = push(work, ":refs/kb/traces/y")
    assert uncited.returncode != 0, "a push deletes no trace ref, cited or not"
    assert "refs/kb/traces/y cannot be deleted by a push" in uncited.stderr


# --------------------------------------------------------------------------- robustness


def test_a_crashing_hook_refuses_the_push_in_one_line(server, clone, tmp_path, monkeypatch):
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "sitecustomize.py").write_text(
        "import gitkb.hooks.local\n"
        "def broken(lines, repo=None):\n"
        "    raise RuntimeError('simulated failure')\n"
        "gitkb.hooks.local.pre_receive = broken\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(crash))
    admit_examples(clone)
    done = push(clone)
    assert done.returncode != 0
    remote = [line for line in done.stderr.splitlines() if line.startswith("remote: ")]
    assert len(remote) == 1 and "simulated failure" in remote[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not has_object(server, clone.tip)


def test_cost_follows_the_push_not_the_store(server, clone, monkeypatch):
    """With the server's index cache in place, the main check never lists the store's
    records and reads only the blobs the push changed (and the store's gitkb.toml)."""
    admit_examples(clone)
    repo = Repository.open(clone.location)
    assert hooks.pre_receive([f"{ZERO_SHA} {clone.tip} refs/heads/main"], repo) == []
    old = clone.tip
    clone.admit(rec.dumps(synthetic.strategy(30)), "insert")
    new_record = clone.view().entry(synthetic.strategy(30)["id"])["path"]

    def no_listing(*args, **kwargs):
        raise AssertionError("pre-receive listed a tree")

    read = []
    blob = Repository.blob
    monkeypatch.setattr(Repository, "list_tree", no_listing)
    monkeypatch.setattr(Repository, "list_tree_id", no_listing)
    monkeypatch.setattr(Repository, "blob", lambda self, sha: read.append(sha) or blob(self, sha))
    repo = Repository.open(clone.location)
    assert hooks.pre_receive([f"{old} {clone.tip} refs/heads/main"], repo) == []
    config = clone.repo.blob_sha(clone.tip, "gitkb.toml")
    assert [sha for sha in read if sha != config] == [clone.repo.blob_sha(clone.tip, new_record)]


def test_shim_falls_back_to_python_when_git_kb_is_missing(server, clone, monkeypatch):
    """Without `git-kb` on PATH the shim runs `python3 -m gitkb`; if that cannot import
    gitkb either, the push is refused rather than let through unchecked."""
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "git-kb").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    monkeypatch.setenv("GITKB_PYTHON", "/nonexistent/python3")
    admit_examples(clone)
    done = push(clone)
    assert done.returncode != 0 and not has_object(server, clone.tip)


def test_record_citing_a_commit_not_in_the_store_is_refused(server, clone):
    trace = clone.repo.write_commit(None, {"kernel.py": b"v0\n"}, "v0\n")
    clone.repo.update_ref("refs/kb/traces/t", None, trace)
    assert push(clone, "refs/kb/traces/t").returncode == 0, "creating a trace ref is allowed"
    record = synthetic.strategy(40)
    record["evidence"]["raw"].update(source_repo="t", git_commit="0" * 40)
    commit = forge(
        clone,
        record_edits({rec.path_for(record): record}),
        f"kb insert {record['id']}",
        [("KB-Action", "insert"), ("KB-Record", record["id"])],
    )
    output = refused(push(clone), server, commit, "provenance")
    assert f"{record['id']}: provenance: evidence.raw.git_commit: {'0' * 40}" in output


def test_gates_see_trace_refs_pushed_together_with_the_records(server, clone):
    """A trace ref created in the same push resolves for the gates (the push's view of refs)."""
    trace = clone.repo.write_commit(None, {"kernel.py": b"v0\n"}, "v0\n")
    clone.repo.update_ref("refs/kb/traces/u", None, trace)
    record = synthetic.strategy(41)
    record["evidence"]["raw"].update(source_repo="u", git_commit=trace)
    forge(
        clone,
        record_edits({rec.path_for(record): record}),
        f"kb insert {record['id']}",
        [("KB-Action", "insert"), ("KB-Record", record["id"])],
    )
    alone = push(clone, "main")
    assert f"{record['id']}: provenance: " in alone.stderr, alone.stderr
    together = push(clone, "main", "refs/kb/traces/u")
    assert f"{record['id']}: provenance: " not in together.stderr, together.stderr


def test_links_of_pushed_records_must_resolve(server, clone):
    """The relations gate needs the whole store, so the hook checks the pushed records'
    links against the new tip's index; a link to a record that exists passes."""
    first = synthetic.strategy(21)
    clone.admit(rec.dumps(first), "insert")
    assert push(clone).returncode == 0
    linked = synthetic.strategy(22)
    linked["retrieval"]["links"] = {"see_also": [first["id"]]}
    clone.admit(rec.dumps(linked), "insert")
    assert push(clone).returncode == 0
    dangling = synthetic.strategy(23)
    dangling["retrieval"]["links"] = {"see_also": ["nvidia.h100.triton.softmax.gone-s99"]}
    commit = forge(
        clone,
        record_edits({rec.path_for(dangling): dangling}),
        f"kb insert {dangling['id']}",
        [("KB-Action", "insert"), ("KB-Record", dangling["id"])],
    )
    output = refused(push(clone), server, clone.tip, "relations")
    assert commit == clone.tip and "nvidia.h100.triton.softmax.gone-s99" in output
