"""Attestation ledger, retraction, un-retraction and reproductions on the git store."""

from __future__ import annotations

import json

import pytest
from helpers import git, kb
from test_resolve import strategy

from gitkb.errors import GitkbError
from gitkb.layout import ledger_path
from gitkb.record import dumps
from gitkb.store import Store
from gitkb.vcs import treediff
from gitkb.warmstart.attest import attest, read_ledger
from gitkb.warmstart.retract import retract, unretract


def test_attest_appends_one_line_and_moves_no_ranking_scalar(bare_store):
    record = strategy(1)
    bare_store.admit(dumps(record), "insert")
    before_tip = bare_store.tip
    record_path = bare_store.view().entry(record["id"])["path"]
    admission = attest(bare_store, record["id"], "validated", by="box-a", evidence={"gpu": "h100"})
    info = bare_store.repo.commit(admission.commit)
    assert info.subject == f"kb attest {record['id']}" and list(info.parents) == [before_tip]
    trailers = dict(info.trailers)
    assert trailers["KB-Action"] == "attest" and trailers["KB-Outcome"] == "validated"
    changed = treediff.changes(bare_store.repo, before_tip, admission.commit)
    assert [c.path for c in changed] == [ledger_path(record["id"])]
    assert bare_store.repo.read(admission.commit, record_path) == dumps(record)
    attest(bare_store, record["id"], "failed", by="box-b")
    ledger = read_ledger(bare_store, record["id"])
    assert len(ledger.raw.splitlines()) == 2
    assert ledger.events[0]["evidence"] == {"gpu": "h100"}
    counts = ledger.counts()
    assert (counts["recalls"], counts["validations"], counts["failures"]) == (2, 1, 1)
    assert counts["last_outcome"] == "failed" and counts["last_by"] == "box-b"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("outcomes", "hint"),
    [
        (["not_reproduced", "not_reproduced"], "not reproduced 2 times"),
        (["failed", "failed", "not_reproduced"], "3 attempts"),
        (["failed", "inapplicable", "inapplicable", "failed"], None),
        (["not_reproduced", "not_reproduced", "validated"], None),
    ],
)
def test_retire_hint_patterns(bare_store, outcomes, hint):
    record = strategy(1)
    bare_store.admit(dumps(record), "insert")
    for outcome in outcomes:
        attest(bare_store, record["id"], outcome)
    result = kb(
        "attest", record["id"], "--outcome", "inapplicable", "--store", str(bare_store.location)
    )
    document = json.loads(result.stdout)
    assert (hint in document["retire_hint"]) if hint else document["retire_hint"] is None


@pytest.mark.slow
def test_attest_bad_input_writes_nothing(bare_store):
    record = strategy(1)
    bare_store.admit(dumps(record), "insert")
    tip = bare_store.tip
    with pytest.raises(GitkbError, match="unknown outcome"):
        attest(bare_store, record["id"], "great")
    with pytest.raises(GitkbError, match="no record"):
        attest(bare_store, "nvidia.h100.triton.softmax.nope-s01", "failed")
    store = str(bare_store.location)
    for args in (
        ["--outcome", "great"],
        ["--outcome", "failed", "--evidence", "no-equals-sign"],
    ):
        result = kb("attest", record["id"], *args, "--store", store)
        assert result.returncode == 2 and b"Traceback" not in result.stderr
    assert bare_store.tip == tip


@pytest.mark.slow
def test_a_ledger_line_that_is_not_json_is_refused_and_survived(store):
    record = strategy(1)
    store.admit(dumps(record), "insert")
    attest(store, record["id"], "validated")
    ledger = store.location / ledger_path(record["id"])
    ledger.write_text(ledger.read_text() + "{oops\n")
    git("commit", "-qam", "hand-edited ledger", cwd=store.location)
    tip = store.tip
    result = kb("attest", record["id"], "--outcome", "failed", "--store", str(store.location))
    assert result.returncode == 1
    assert b"line 2 is not JSON" in result.stderr and store.tip == tip
    from gitkb.warmstart.resolve import resolve

    rank = resolve(store, "softmax", arch="hopper")["ranks"][0]
    assert rank["attestations"]["validations"] == 1
    assert rank["attestations"]["unreadable_lines"] == 1


@pytest.mark.slow
def test_retract_is_a_tombstone_that_keeps_every_gate_green(store):
    record = strategy(1)
    store.admit(dumps(record), "insert")
    admission = retract(store, record["id"], "wrong results\non odd widths", by="reviewer")
    info = store.repo.commit(admission.commit)
    trailers = dict(info.trailers)
    assert info.subject == f"kb retract {record['id']}"
    assert trailers["KB-Reason"] == "wrong results on odd widths"
    assert "worth.rank.score 0.3 -> 0" in info.message
    kept = json.loads(store.read_record(record["id"]).raw)
    assert kept["status"] == "deprecated" and kept["worth"]["rank"]["score"] == 0
    assert store.view().entry(record["id"])["worth_score"] == 0
    assert read_ledger(store, record["id"]).open_retraction()["was"] == {
        "status": "active",
        "score": 0.3,
    }
    validated = kb("validate", str(store.location))
    assert validated.returncode == 0, validated.stdout.decode()
    with pytest.raises(GitkbError, match="already deprecated"):
        retract(store, record["id"], "again")
    with pytest.raises(GitkbError, match="reason is required"):
        retract(store, strategy(2)["id"], "  ")
    attest(store, record["id"], "validated")  # evidence alone does not lift the tombstone
    assert store.view().entry(record["id"])["status"] == "deprecated"
    unretract(store, record["id"], "fixed upstream; validated on box-c")
    restored = json.loads(store.read_record(record["id"]).raw)
    assert restored["status"] == "active" and restored["worth"]["rank"]["score"] == 0.3
    assert kb("validate", str(store.location)).returncode == 0
    with pytest.raises(GitkbError, match="is not retracted"):
        unretract(store, record["id"], "twice")
    assert [h["action"] for h in store.log(record["id"])][:4] == [
        "unretract",
        "attest",
        "retract",
        "insert",
    ]


def test_readmission_of_retracted_code_does_not_resurrect_it(bare_store):
    record = strategy(1)
    bare_store.admit(dumps(record), "insert")
    retract(bare_store, record["id"], "numerically wrong")
    same_handle = dict(record, id="nvidia.h100.triton.softmax.again-s01")
    renamed = strategy(7, code=record["payload"]["implementation"]["snippet"], direction="other")
    for incoming in (same_handle, renamed):
        admission = bare_store.admit(dumps(incoming), "insert")
        assert admission.action == "confirm" and admission.record_id == record["id"]
        assert "not revived" in admission.note
        assert incoming["id"] not in bare_store.view()
    assert bare_store.view().entry(record["id"])["status"] == "deprecated"
    trailers = dict(bare_store.repo.commit(bare_store.tip).trailers)
    assert trailers["KB-Reproduction"].startswith("csha:")


def test_reproduction_confirms_once_and_whitespace_does_not_matter(bare_store):
    record = strategy(1)
    bare_store.admit(dumps(record), "insert")
    again = json.loads(json.dumps(record))
    again["id"] = "nvidia.h100.triton.softmax.rerun-s05"
    snippet = record["payload"]["implementation"]["snippet"]
    again["payload"]["implementation"]["snippet"] = snippet.replace(" - ", "-").replace("(", "( ")
    first = bare_store.admit(dumps(again), "insert")
    assert first.action == "confirm" and first.commit
    second = bare_store.admit(dumps(again), "insert")
    assert second.commit is None and "already counted" in second.note
    counters = json.loads(bare_store.read_record(record["id"]).raw)["worth"]["track"]
    assert counters["counters"]["verified_effective"] == 1
    other_arch = strategy(1, product="mi300x")  # same code, another page: a new record
    assert bare_store.admit(dumps(other_arch), "insert").action == "insert"


@pytest.mark.slow
def test_concurrent_attestations_merge_by_union(tmp_path):
    remote = tmp_path / "remote.git"
    seed = Store.init(tmp_path / "seed")
    record = strategy(1)
    seed.admit(dumps(record), "insert")
    git("clone", "-q", "--bare", str(seed.location), str(remote))
    clones = []
    for name in ("a", "b"):
        git("clone", "-q", str(remote), str(tmp_path / name))
        clones.append(Store.open(tmp_path / name))
    for clone, box in zip(clones, ("box-a", "box-b"), strict=True):
        attest(clone, record["id"], "validated" if box == "box-a" else "failed", by=box)
    git("push", "-q", "origin", "main", cwd=clones[0].location)
    refused = git("push", "-q", "origin", "main", cwd=clones[1].location, check=False)
    assert refused.returncode != 0
    git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=clones[1].location)
    git("push", "-q", "origin", "main", cwd=clones[1].location)
    merged = Store.open(remote)
    assert len(merged.repo.commit(merged.tip).parents) == 2
    ledger = read_ledger(merged, record["id"])
    assert sorted(e["by"] for e in ledger.events) == ["box-a", "box-b"]
    assert not ledger.bad_lines and ledger.counts()["recalls"] == 2
    validated = kb("validate", str(remote))
    assert validated.returncode == 0, validated.stdout.decode()


@pytest.mark.slow
def test_the_retire_pass_lists_then_retracts_one_commit_each(bare_store):
    suspect, tried, fine, gone = strategy(1), strategy(2), strategy(3), strategy(4)
    for record in (suspect, tried, fine, gone):
        bare_store.admit(dumps(record), "insert")
    for outcome in ("not_reproduced", "not_reproduced"):
        attest(bare_store, suspect["id"], outcome, by="box-a")
    for outcome in ("failed", "failed", "inapplicable", "failed"):
        attest(bare_store, tried["id"], outcome, by="box-b")
    for outcome in ("not_reproduced", "not_reproduced", "validated"):
        attest(bare_store, fine["id"], outcome, by="box-c")
    for outcome in ("not_reproduced", "not_reproduced"):
        attest(bare_store, gone["id"], outcome, by="box-d")
    retract(bare_store, gone["id"], "already taken back")
    store = str(bare_store.location)

    tip = bare_store.tip
    dry = kb("curate", "--retire", "--store", store)
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)
    assert listed["applied"] is False and listed["retracted"] == 0
    assert [(r["id"], r["hint"]) for r in listed["records"]] == sorted(
        [
            (suspect["id"], "not reproduced 2 times and never validated"),
            (tried["id"], "3 attempts (inapplicable excluded) and no validation"),
        ]
    )
    assert Store.open(bare_store.location).tip == tip  # a dry run writes nothing

    done = json.loads(
        kb("curate", "--retire", "--apply", "--by", "curator", "--store", store).stdout
    )
    assert done["retracted"] == 2
    commits = [r["commit"] for r in done["records"]]
    assert len(set(commits)) == 2
    subjects = git("log", "--format=%s", f"{tip}..main", cwd=store).stdout.splitlines()
    assert sorted(subjects) == sorted(f"kb retract {r['id']}" for r in (suspect, tried))
    for record in (suspect, tried):
        assert bare_store.view().entry(record["id"])["status"] == "deprecated"
        retraction = read_ledger(bare_store, record["id"]).open_retraction()
        assert retraction["reason"].startswith("retire pass: ") and retraction["by"] == "curator"
    assert bare_store.view().entry(fine["id"])["status"] == "active"
    assert json.loads(kb("curate", "--retire", "--store", store).stdout)["records"] == []
    assert kb("validate", store).returncode == 0
    missing = kb("curate", "--store", store)
    assert missing.returncode == 2 and b"--retire" in missing.stderr


def test_the_retire_pass_skips_a_record_validated_meanwhile(bare_store, monkeypatch):
    """Listed when its hint fired; validated before the pass writes: not retracted."""
    from gitkb.warmstart import retract as retract_module

    record = strategy(1)
    bare_store.admit(dumps(record), "insert")
    for outcome in ("not_reproduced", "not_reproduced"):
        attest(bare_store, record["id"], outcome)
    stale = retract_module.retire_candidates(bare_store.view())
    attest(bare_store, record["id"], "validated")
    monkeypatch.setattr(retract_module, "retire_candidates", lambda view: stale)
    tip = bare_store.tip
    report = retract_module.retire_pass(bare_store, apply=True)
    assert report["retracted"] == 0 and bare_store.tip == tip
    assert "no longer fires" in report["records"][0]["skipped"]
