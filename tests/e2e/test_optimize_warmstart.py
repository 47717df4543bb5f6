"""Warm start and write-back: a run seeded from a store mined from an earlier run.

The fake harness of test_optimize_loop times a candidate by its own COST constant,
so every verdict here is deterministic; the store is real, its records are mined
from a real first run's trace, and the second run attests into its ledger.
"""

from __future__ import annotations

import json

import pytest
from helpers import git, kb, lose_object
from helpers.optimize_runs import (
    CASES_SMALL,
    attest_outcomes,
    make_bundle,
    replay_dir,
    run,
    variant,
)
from helpers.records import strategy

from gitkb.store import Store

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

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


def warm_run(tmp_path, store: Store, kernel: str, warm_start: str = "on"):
    """A run warm-started (``warm_start``) from ``store``, whose rounds replay ``kernel``."""
    bundle = make_bundle(tmp_path, cases=CASES_SMALL)
    return run(
        tmp_path,
        bundle,
        replay=replay_dir(tmp_path, kernel),
        warm_start=warm_start,
        kb=str(store.location),
    )


def reference_kernel_id(store: Store) -> str:
    [entry] = [e for e in store.view().entries() if e["type"] == "reference-kernel"]
    return entry["id"]


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
    # Every offer is judged (the first run's strategy yields the same code: same verdict)
    first_rank, second_rank = warm["candidates"]
    assert (first_rank["record"], first_rank["outcome"]) == (stored, "validated")
    assert second_rank["outcome"] == "validated" and second_rank["same_code_as"] == "ws-01"
    # baseline COST 100 -> adopted 50 (2x, from the store) -> the run's own 25 (2x more)
    assert document["total_speedup"] == pytest.approx(4.0)
    assert document["incremental_speedup"] == pytest.approx(2.0)
    statuses = [e["status"] for e in document["experiments"]]
    # the second rank is the same code: never evaluated (TLX: failed)
    assert statuses == ["baseline", "promoted", "failed", "promoted"]
    assert "ws-01 record=" in done.stderr.decode() and "outcome=validated" in done.stderr.decode()
    assert (tmp_path / "out" / "warm_start" / "kb_references" / "index.md").is_file()
    assert attest_outcomes(store, stored) == ["validated"]

    # Write-back: the second run's records are in the store under the label its winner
    # commit names, and the store passes all 19 gates.
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
    # Its reference kernel states the speedup against the kernel as the run found it (4x),
    # the one the next run ranks it by, beside its gain over the adopted code (2x: -50%).
    from gitkb.record.curation import bench_key, speedup

    ours = [store.read_record(e["id"]).data for e in store.view().entries()]
    refk = next(r for r in ours if r["type"] == "reference-kernel"
                and r["evidence"]["raw"]["source_repo"] == label)  # fmt: skip
    assert refk["retrieval"]["signals"]["metrics"]["speedup_x"] == pytest.approx(4.0, rel=0.05)
    assert refk["worth"]["gain"]["pct"] == pytest.approx(50.0, abs=3)
    assert speedup(refk) == pytest.approx(4.0, rel=0.05)
    # its bench key is the workload's: the cases it was measured over
    assert refk["evidence"]["raw"]["effect"]["bench_cases"] == sorted(
        c["case_id"] for c in document["cases"]
    )
    assert bench_key(refk) is not None
    checked = kb("validate", str(store.location))
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    assert "0 of 19 gates failed" in checked.stdout.decode()


def test_candidate_failing_verification_is_attested_failed_and_not_adopted(tmp_path, store):
    # Correct on the first run's workload; wrong on the 'small' case the second run protects.
    first_run(tmp_path, store, variant(COST=50.0, BROKEN=["small"]), cases=CASES_LARGE)
    stored = reference_kernel_id(store)
    bundle = make_bundle(tmp_path, cases=CASES_SMALL + CASES_LARGE)
    result, _lines = run(
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
    # The audit folder's index now lists them as reference only: prose, not code to adopt.
    index = (tmp_path / "out" / "warm_start" / "kb_references" / "index.md").read_text()
    tried = index.split("## Reference only: tried in this run")[1]
    assert all(f"| {record_id} | failed |" in tried for record_id in offered)
    statuses = [(e["experiment_id"], e["status"]) for e in document["experiments"]]
    assert statuses == [
        ("baseline", "baseline"),
        ("ws-01", "rejected"),
        ("ws-02", "failed"),  # ws-01's code: never evaluated (TLX: failed), no slot spent
        ("r001-c001", "promoted"),  # ws-01 was measured (round 1's c000)
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
    assert [e["experiment_id"] for e in document["experiments"]] == ["baseline", "r001-c000"]
    assert not (tmp_path / "out" / "warm_start").exists()
    assert not any("warm start" in line for line in lines)
    actions = [
        c.trailers for c in store.repo.walk(store.tip, exclude=(before,)) if c.trailers
    ]  # only the write-back's admissions, no attestations
    assert actions and all(("KB-Action", "attest") not in t for t in actions)


def test_reference_mode_mirrors_prose_and_adopts_nothing(tmp_path, store):
    first_run(tmp_path, store, variant(COST=50.0))
    before = store.tip
    result, _ = warm_run(tmp_path, store, variant(COST=80.0), "reference")
    document = result.document
    assert document["warm_start"]["offered"] and document["warm_start"]["candidates"] == []
    assert document["warm_start"]["adopted"] is None
    assert [e["experiment_id"] for e in document["experiments"]] == ["baseline", "r001-c000"]
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
    first_run(tmp_path, store, variant(COST=50.0))
    lose_object(store.location, git("rev-parse", "main^{tree}", cwd=store.location).stdout.strip())
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


def _records(store: Store) -> dict[str, dict]:
    return {e["id"]: store.read_record(e["id"]).data for e in store.view().entries()}


def test_write_back_after_adopting_is_the_records_confirmation_and_the_runs_own_work(
    tmp_path, store
):
    """Adopting store code is that record's attestation and confirmation; the write-back
    files only what the run changed on top of it, its gain measured against it."""
    first_run(tmp_path, store, variant(COST=50.0))
    stored = reference_kernel_id(store)
    before = _records(store)
    result, _ = warm_run(tmp_path, store, variant(COST=25.0), "on")
    document = result.document
    assert document["warm_start"]["adopted"]["record"] == stored
    label = document["trace"]["label"]
    write_back = document["write_back"]
    assert write_back["success"] and write_back["adopted"]["record"] == stored
    assert write_back["adopted"]["action"] == "confirm" and write_back["adopted"]["commit"]

    after = _records(store)
    # The adopted record: validated on its ledger and confirmed once by this run.
    adopted = after[stored]
    assert adopted["status"] == "active"
    assert adopted["worth"]["track"]["counters"]["verified_effective"] == 1
    trace_start = git("rev-list", "--max-parents=0", "main", cwd=tmp_path / "out" / "trace")
    assert adopted["worth"]["track"]["confirm_keys"] == [f"{label}@{trace_start.stdout.strip()}"]
    assert attest_outcomes(store, stored) == ["validated"]
    confirm = store.repo.commit(write_back["adopted"]["commit"])
    assert confirm.subject == f"kb confirm {stored}"
    assert ("KB-Trace", label) in confirm.trailers
    # The first run's other records are untouched.
    for record_id, record in before.items():
        if record_id != stored:
            assert after[record_id] == record

    # New records: only the run's own step on top of the adopted code, and the final kernel,
    # each 2x (COST 50 -> 25) against the adopted code, not 4x against the kernel as found.
    new = {i: r for i, r in after.items() if i not in before}
    assert sorted(r["type"] for r in new.values()) == ["reference-kernel", "strategy"]
    for record in new.values():
        assert record["evidence"]["raw"]["source_repo"] == label
        assert record["worth"]["gain"]["pct"] == pytest.approx(50.0)
    [strategy] = [r for r in new.values() if r["type"] == "strategy"]
    assert "warm start" not in strategy["payload"]["change"].lower()
    # It builds on the adopted code, and says so; its diff starts there.
    builds_on = strategy["payload"]["trace"]["builds_on"]["approach"]
    assert "adopted from the knowledge base" in builds_on
    snippet = strategy["payload"]["implementation"]["snippet"].lower()
    assert "-cost = 50.0" in snippet and "+cost = 25.0" in snippet
    assert {(o["action"], o["record"]) for o in write_back["records"]} == {
        ("insert", record_id) for record_id in new
    }
    # The trace starts at the adopted code.
    log = git("log", "--format=%s", "main", cwd=tmp_path / "out" / "trace").stdout.splitlines()
    assert log[-1] == "v0: baseline kernel (adopted from the knowledge base)" and len(log) == 2
    checked = kb("validate", str(store.location))
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


def test_a_run_that_adds_nothing_to_the_adopted_code_files_no_record(tmp_path, store):
    first_run(tmp_path, store, variant(COST=50.0))
    stored = reference_kernel_id(store)
    before = _records(store)
    result, _ = warm_run(tmp_path, store, variant(COST=80.0), "on")  # slower than adopted
    document = result.document
    assert document["winner"] == "ws-01" and document["incremental_speedup"] == 1.0
    write_back = document["write_back"]
    assert write_back["adopted"]["record"] == stored
    # Mining sees the adopted code as the final kernel: a reproduction of the record, which
    # the write-back's confirmation already counted (the same trace and commit).
    assert write_back["records"] == [{"action": "confirm", "record": stored, "commit": None}]
    after = _records(store)
    assert set(after) == set(before)
    assert after[stored]["worth"]["track"]["counters"]["verified_effective"] == 1
    # Running the same write-back again counts nothing twice.
    from gitkb.warmstart.attest import confirm_adoption

    trace_start = git("rev-list", "--max-parents=0", "main", cwd=tmp_path / "out" / "trace")
    again = confirm_adoption(store, stored, document["trace"]["label"], trace_start.stdout.strip())
    assert again.commit is None and "already counted" in again.note


def test_the_warm_start_asks_for_the_kernels_language_and_product(tmp_path, bare_store):
    """The optimizer resolves on the bundle's product page in the kernel's own language: a
    HIP patch or another product's number is never offered to a Triton kernel on an H100."""

    from gitkb.optimize.providers import ProviderOptions
    from gitkb.optimize.providers.warmstart import Provider
    from gitkb.record import dumps

    triton, h200 = strategy(1, pct=10.0), strategy(2, product="h200", pct=60.0)
    hip = strategy(3, pct=50.0)
    hip["retrieval"]["scope"]["dsl"] = hip["retrieval"]["generality"]["language"] = "any"
    hip["payload"]["problem"]["dsl"] = "hip"
    for record in (triton, h200, hip):
        bare_store.admit(dumps(record), "insert")
    provider = Provider(ProviderOptions(kb=str(bare_store.location)), {})
    source = "import triton.language as tl\n\ndef softmax(x, m):\n    y = tl.exp(x - m)\n"
    answer = provider.offer("softmax", "h100", source, tmp_path / "warm")
    assert answer["options"]["dsl"] == "triton" and answer["hardware"]["page"] == "h100"
    assert [r["id"] for r in answer["ranks"]] == [triton["id"]]
    assert answer["counts"]["other_language"] == 1 and answer["counts"]["other_product"] == 1
