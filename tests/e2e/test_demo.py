"""`git kb demo`: the whole loop runs, and every narrated claim is checked against the
repositories and results it left behind, with C git where git is the witness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import git, kb

from gitkb.store import Store
from gitkb.warmstart.attest import read_ledger

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    pytest.importorskip("numpy")
    folder = tmp_path_factory.mktemp("demo") / "gitkb-demo"
    done = kb("demo", str(folder), "--json")
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return folder, json.loads(done.stdout), done.stderr.decode()


def test_narration_names_each_step_and_where_things_are(demo):
    folder, summary, narration = demo
    for number in range(1, 8):
        assert f"[{number}/7]" in narration
    assert f"Everything is under {folder.resolve()}" in narration
    for path in summary["paths"].values():
        assert Path(path).exists(), path


def test_push_really_landed_on_the_server(demo):
    _folder, summary, _ = demo
    server = summary["paths"]["server"]
    assert summary["steps"]["push"]["accepted"]
    assert "accepted" in demo[2]
    mined = summary["steps"]["mine"]
    assert mined["records"], mined
    # the store's main as mined is on the server's main, with the trace it cites
    git("merge-base", "--is-ancestor", mined["store_tip"], "main", cwd=server)
    label = mined["label"]
    assert label == summary["steps"]["first_run"]["trace_label"]
    refs = git("for-each-ref", "--format=%(refname)", "refs/kb/traces/", cwd=server).stdout
    assert f"refs/kb/traces/{label}" in refs.split()
    files = git("ls-tree", "-r", "--name-only", "main", "records/", cwd=server).stdout
    assert all(any(r in f for f in files.splitlines()) for r in mined["records"])
    # the hook really is installed and is gitkb's
    hook = Path(server) / "hooks" / "pre-receive"
    assert "gitkb" in hook.read_text()


def test_tampered_push_was_refused_by_a_gate_and_left_nothing(demo):
    _folder, summary, narration = demo
    tamper = summary["steps"]["tamper"]
    assert tamper["refused"] and tamper["messages"]
    commit, record_id = tamper["commit"], tamper["record"]
    server = summary["paths"]["server"]
    # the refused commit exists in the clone, not on the server
    assert git("cat-file", "-e", commit, cwd=summary["paths"]["tamper"]).returncode == 0
    assert git("cat-file", "-e", commit, cwd=server, check=False).returncode != 0
    message = tamper["messages"][0]
    assert message.startswith(f"gitkb: refs/heads/main {commit}: {record_id}: ")
    assert message in narration
    # the server's copy of the record still holds the measured number
    path = next(
        p
        for p in git("ls-tree", "-r", "--name-only", "main", cwd=server).stdout.splitlines()
        if p.endswith(f"/{record_id}.json")
    )
    served = json.loads(git("show", f"main:{path}", cwd=server).stdout)
    mine = json.loads(git("show", f"{commit}:{path}", cwd=summary["paths"]["tamper"]).stdout)
    claimed = mine["worth"]["gain"]["metrics"][0]["delta_pct"]
    assert served["worth"]["gain"]["metrics"][0]["delta_pct"] * 2 == pytest.approx(claimed, 0.01)
    assert any(": no-fabrication: " in m for m in tamper["messages"])


def test_second_run_really_adopted_the_warm_start(demo):
    _folder, summary, narration = demo
    warm = summary["steps"]["warm_start"]
    result = json.loads((Path(summary["paths"]["run_2"]) / "result.json").read_text())
    adopted = result["warm_start"]["adopted"]
    assert adopted is not None and adopted == warm["adopted"]
    assert adopted["record"] in summary["steps"]["mine"]["records"]
    first = next(e for e in result["experiments"] if e["experiment_id"] == adopted["experiment"])
    assert first["status"] == "promoted" and first["round_index"] == 0
    assert result["total_speedup"] == pytest.approx(warm["total_speedup"])
    assert result["incremental_speedup"] == pytest.approx(warm["incremental_speedup"])
    assert result["total_speedup"] > 1.0
    assert f"total_speedup {warm['total_speedup']:.2f}x" in narration
    # the attestation went into the clone's ledger and, pushed, into the server's
    assert summary["steps"]["push_back"]["accepted"]
    server = Store.open(summary["paths"]["server"])
    outcomes = [e.get("outcome") for e in read_ledger(server, adopted["record"]).events]
    assert "validated" in outcomes
    # the run's winner commit names the trace label the write-back mined it under
    repo = summary["paths"]["kernel_repo_2"]
    label = git("log", "-1", "--format=%(trailers:key=KB-Trace,valueonly)", cwd=repo).stdout
    assert label.strip() == warm["trace_label"] == warm["write_back"]["label"]
    assert server.repo.resolve(f"refs/kb/traces/{label.strip()}") is not None


def test_server_store_passes_every_gate(demo):
    _, summary, _ = demo
    done = kb("validate", summary["paths"]["server"])
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert "0 of 19 gates failed" in done.stdout.decode()


def test_demo_refuses_a_folder_in_use(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    done = kb("demo", str(tmp_path / "taken"))
    assert done.returncode != 0 and b"new or empty folder" in done.stderr
    assert b"Traceback" not in done.stderr
