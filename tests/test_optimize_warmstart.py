"""Warm start and write-back: a run seeded from a store mined from an earlier run.

The fake harness of test_optimize_loop times a candidate by its own COST constant,
so every verdict here is deterministic; the store is real, its records are mined
from a real first run's trace, and the second run attests into its ledger.
"""

from __future__ import annotations

import json

import pytest
from conftest import git, kb
from test_optimize_loop import make_bundle, replay_dir, run, variant

from gitkb.store import Store
from gitkb.warmstart.attest import read_ledger

CASES_SMALL = [{"case_id": "small", "parameters": {"scale": 1.0}, "weight": 1.0}]
CASES_LARGE = [{"case_id": "large", "parameters": {"scale": 4.0}, "weight": 1.0}]


def first_run(tmp_path, store: Store, stored_kernel: str, cases=None) -> dict:
    """A run whose win (``stored_kernel``) is written back into ``store``."""
    folder = tmp_path / "first"
    folder.mkdir()
    bundle = make_bundle(folder, cases=cases or CASES_SMALL)
    result, _ = run(
        folder, bundle, replay=replay_dir(folder, stored_kernel), kb=str(store.location)
    )
    assert result.exit_code == 0, result.document
    write_back = result.document["write_back"]
    assert write_back["success"] and write_back["counts"].get("insert"), write_back
    return result.document


def reference_kernel_id(store: Store) -> str:
    [entry] = [e for e in store.view().entries() if e["type"] == "reference-kernel"]
    return entry["id"]


def attest_outcomes(store: Store, record_id: str) -> list[str]:
    return [e["outcome"] for e in read_ledger(store, record_id).events if e["event"] == "attest"]


def test_adopting_run_reports_total_and_incremental_speedup(tmp_path, store):
    first = first_run(tmp_path, store, variant(COST=50.0))
    stored = reference_kernel_id(store)
    bundle = make_bundle(tmp_path, cases=CASES_SMALL)
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "kernel.py").write_text(variant())
    git("add", "kernel.py", cwd=repo)
    git("commit", "-qm", "kernel", cwd=repo)
    done = kb(
        "optimize", str(bundle), "--kernel", str(repo / "kernel.py"), "-o", str(tmp_path / "out"),
        "--provider", "replay", "--replay-dir", str(replay_dir(tmp_path, variant(COST=25.0))),
        "--warm-start", "on", "--kb", str(store.location),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    document = json.loads(done.stdout)
    assert json.loads((tmp_path / "out" / "result.json").read_text()) == document
    warm = document["warm_start"]
    assert warm["read_reason"] == "read" and warm["offered"][0]["id"] == stored
    assert warm["adopted"]["record"] == stored and warm["adopted"]["experiment"] == "ws-01"
    assert [(c["record"], c["outcome"]) for c in warm["candidates"]] == [(stored, "validated")]
    # baseline COST 100 -> adopted 50 (2x, from the store) -> the run's own 25 (2x more)
    assert document["total_speedup"] == pytest.approx(4.0)
    assert document["incremental_speedup"] == pytest.approx(2.0)
    assert [e["status"] for e in document["experiments"]] == ["baseline", "promoted", "promoted"]
    assert "ws-01 record=" in done.stderr.decode() and "outcome=validated" in done.stderr.decode()
    assert (tmp_path / "out" / "warm_start" / "kb_references" / "index.md").is_file()
    assert attest_outcomes(store, stored) == ["validated"]

    # Write-back: the second run's records are in the store under the label its winner
    # commit names, and the store passes all 17 gates.
    label = document["trace"]["label"]
    assert label != first["trace"]["label"]
    assert document["write_back"]["label"] == label and document["write_back"]["success"]
    trailers = git("log", "-1", "--format=%(trailers:key=KB-Trace,valueonly)", cwd=repo).stdout
    assert trailers.strip() == label
    assert store.repo.resolve(f"refs/kb/traces/{label}") == document["trace"]["head"]
    sources = {
        (store.read_record(e["id"]).data["evidence"]["raw"] or {}).get("source_repo")
        for e in store.view().entries()
    }
    assert label in sources and first["trace"]["label"] in sources
    checked = kb("validate", str(store.location))
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    assert "0 of 17 gates failed" in checked.stdout.decode()


def test_candidate_failing_verification_is_attested_failed_and_not_adopted(tmp_path, store):
    # Correct on the first run's workload; wrong on the 'small' case the second run protects.
    first_run(tmp_path, store, variant(COST=50.0, BROKEN=["small"]), cases=CASES_LARGE)
    stored = reference_kernel_id(store)
    bundle = make_bundle(tmp_path, cases=CASES_SMALL + CASES_LARGE)
    result, lines = run(
        tmp_path,
        bundle,
        replay=replay_dir(tmp_path, variant(COST=80.0)),
        warm_start="on",
        kb=str(store.location),
    )
    document = result.document
    warm = document["warm_start"]
    assert warm["adopted"] is None
    # every offered rank carries the bug: the strategy's diff applied to the baseline is the
    # reference kernel again, so it is not run twice and shares the reference kernel's verdict
    offered = [o["id"] for o in warm["offered"]]
    assert offered[0] == stored and len(offered) == 2
    assert [(c["record"], c["outcome"]) for c in warm["candidates"]] == [
        (record_id, "failed") for record_id in offered
    ]
    first_rank, second_rank = warm["candidates"]
    assert any("small" in d for d in first_rank["diagnostics"]), first_rank
    assert second_rank["same_code_as"] == "ws-01"
    for record_id in offered:
        assert attest_outcomes(store, record_id) == ["failed"]
    statuses = [(e["id"], e["status"]) for e in document["experiments"]]
    assert statuses == [
        ("baseline", "baseline"),
        ("ws-01", "rejected"),
        ("ws-02", "rejected"),
        ("r001-c001", "promoted"),
    ]
    assert "BROKEN = []" in (tmp_path / "out" / "best_kernel.py").read_text()
    # nothing adopted: the run's own work is all of the gain
    assert document["total_speedup"] == document["incremental_speedup"] == pytest.approx(1.25)


def test_warm_start_off_ignores_the_store(tmp_path, store):
    first_run(tmp_path, store, variant(COST=50.0))
    before = store.tip
    bundle = make_bundle(tmp_path, cases=CASES_SMALL)
    result, lines = run(
        tmp_path,
        bundle,
        replay=replay_dir(tmp_path, variant(COST=80.0)),
        kb=str(store.location),
    )
    document = result.document
    assert "warm_start" not in document and "total_speedup" not in document
    assert [e["id"] for e in document["experiments"]] == ["baseline", "r001-c001"]
    assert not (tmp_path / "out" / "warm_start").exists()
    assert not any("warm start" in line for line in lines)
    actions = [
        c.trailers for c in store.repo.walk(store.tip, exclude=(before,)) if c.trailers
    ]  # only the write-back's admissions, no attestations
    assert actions and all(("KB-Action", "attest") not in t for t in actions)


def test_reference_mode_mirrors_prose_and_adopts_nothing(tmp_path, store):
    first_run(tmp_path, store, variant(COST=50.0))
    before = store.tip
    bundle = make_bundle(tmp_path, cases=CASES_SMALL)
    result, _ = run(
        tmp_path,
        bundle,
        replay=replay_dir(tmp_path, variant(COST=80.0)),
        warm_start="reference",
        kb=str(store.location),
    )
    document = result.document
    assert document["warm_start"]["offered"] and document["warm_start"]["candidates"] == []
    assert document["warm_start"]["adopted"] is None
    assert [e["id"] for e in document["experiments"]] == ["baseline", "r001-c001"]
    assert (tmp_path / "out" / "warm_start" / "kb_references" / "reference_01.md").is_file()
    assert document["total_speedup"] == document["incremental_speedup"] == pytest.approx(1.25)
    ledger_writes = [
        c
        for c in store.repo.walk(store.tip, exclude=(before,))
        if c.subject.startswith("kb attest")
    ]
    assert ledger_writes == []


def test_bad_knowledge_base_is_a_setup_error(tmp_path):
    bundle = make_bundle(tmp_path)
    done = kb("optimize", str(bundle), "-o", str(tmp_path / "out"), "--warm-start", "on")
    assert done.returncode == 1 and b"needs --kb" in done.stderr
    done = kb(
        "optimize", str(bundle), "-o", str(tmp_path / "out"),
        "--warm-start", "on", "--kb", str(tmp_path / "missing"),
    )  # fmt: skip
    assert done.returncode == 1 and b"--kb" in done.stderr and b"Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_mine_files_an_optimizer_trace_under_the_label_it_states(tmp_path, store):
    bundle = make_bundle(tmp_path, cases=CASES_SMALL)
    result, _ = run(tmp_path, bundle, replay=replay_dir(tmp_path, variant(COST=50.0)))
    label = result.document["trace"]["label"]
    done = kb("mine", str(tmp_path / "out" / "trace"), "--store", str(store.location), "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["label"] == label
    assert store.repo.resolve(f"refs/kb/traces/{label}") == result.document["trace"]["head"]


def test_an_unreadable_store_is_a_cold_start_with_its_reason(tmp_path, store):
    """A store that exists but cannot be read (its main's tree lost, the cache gone) does not
    abort a warm-started run: the run goes on cold and says why."""
    import shutil

    first_run(tmp_path, store, variant(COST=50.0))
    git("repack", "-a", "-d", "-q", cwd=store.location)
    tree = git("rev-parse", "main^{tree}", cwd=store.location).stdout.strip()
    objects = git("rev-list", "--objects", "--all", cwd=store.location).stdout.splitlines()
    keep = [line.split()[0] for line in objects if line.split()[0] != tree]
    (tmp_path / "pack").mkdir()
    git("pack-objects", "-q", str(tmp_path / "pack" / "pack"), cwd=store.location,
        input="\n".join(keep) + "\n")  # fmt: skip
    packs = store.location / ".git" / "objects" / "pack"
    for pack in packs.glob("pack-*"):
        pack.unlink()
    for pack in (tmp_path / "pack").iterdir():
        shutil.move(pack, packs / pack.name)
    shutil.rmtree(store.location / ".git" / "gitkb-cache")
    bundle = make_bundle(tmp_path, cases=CASES_SMALL)
    result, lines = run(
        tmp_path,
        bundle,
        replay=replay_dir(tmp_path, variant(COST=80.0)),
        warm_start="on",
        kb=str(store.location),
    )
    document = result.document
    assert result.exit_code == 0, document
    assert document["warm_start"]["read_reason"] == "read_failed"
    assert "damaged" in document["warm_start"]["read_error"]
    assert document["warm_start"]["offered"] == []
    assert document["write_back"] == {
        "attempted": False,
        "reason": "the knowledge base could not be read",
    }
    assert any("cold start" in line for line in lines)
