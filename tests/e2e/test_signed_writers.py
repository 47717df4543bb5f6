"""Every gitkb writer signs when git is set to sign, and git's own ``verify-commit``
accepts each commit; a store that requires signatures refuses an unsigned writer at once."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import git, kb
from helpers.campaigns import CAMPAIGNS, rmsnorm_trace
from helpers.geak_entries import meta as geak_meta
from helpers.geak_entries import write_entry
from helpers.optimize_runs import make_bundle, replay_dir, variant
from helpers.records import strategy
from helpers.signing import allowed_signers, make_key, needs_ssh_keygen, sign_with, verify_commit

from gitkb.record import dumps
from gitkb.store import Store
from gitkb.vcs.trailers import format_message

pytestmark = [needs_ssh_keygen, pytest.mark.slow]


def ok(done) -> bytes:
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def test_every_writer_signs_and_git_verifies_each_commit(tmp_path):
    key = make_key(tmp_path / "keys", "alice")
    signers = allowed_signers(tmp_path / "allowed_signers", ("alice@example.org", key))
    sign_with(key)
    ok(kb("init", "kb", cwd=tmp_path))
    where = ["--store", str(tmp_path / "kb")]
    suspect, gone, helped = strategy(1), strategy(2), strategy(3)
    for record in (suspect, gone, helped):
        ok(kb("admit", "-", *where, input=dumps(record)))
    for _ in range(2):
        ok(kb("attest", suspect["id"], "--outcome", "not_reproduced", *where))
    ok(kb("feedback", helped["id"], "--outcome", "helped", *where))
    ok(kb("retract", gone["id"], "--reason", "taken back", *where))
    ok(kb("unretract", gone["id"], "--reason", "it holds after all", *where))
    ok(kb("curate", "--retire", "--apply", *where))
    ok(kb("export", "gpu-wiki", str(tmp_path / "wiki"), *where))
    ok(kb("init", "second", cwd=tmp_path))
    ok(kb("import", "gpu-wiki", str(tmp_path / "wiki"), "--store", str(tmp_path / "second")))
    for campaign in CAMPAIGNS:
        ok(kb("mine", str(rmsnorm_trace(tmp_path / "traces", *campaign)), *where))
    cards = json.loads(ok(kb("curate", "--cards", "--apply", *where)))
    assert cards["applied"] and cards["written"] == len(cards["cards"]) > 0, cards
    # The GEAK sync: an import, then a re-import carrying a new attestation.
    geak = tmp_path / "geak"
    entry = write_entry(geak)
    ok(kb("import", "geak", str(geak), "--store", str(tmp_path / "second")))
    data = geak_meta()
    data["attestations"]["history"].append({"outcome": "validated", "at": "2025-06-04T10:00:00Z"})
    data["attestations"]["validations"] += 1
    (entry / "meta.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    synced = json.loads(ok(kb("import", "geak", str(geak), "--json", "--store",
                              str(tmp_path / "second"))))  # fmt: skip
    # The optimizer's write-back: the run's trace mined into --kb.
    before_run = git("rev-parse", "main", cwd=tmp_path / "kb").stdout.strip()
    (tmp_path / "run").mkdir()
    bundle = make_bundle(tmp_path / "run")
    replay = replay_dir(tmp_path / "run", variant(COST=50.0))
    run = json.loads(ok(kb("optimize", str(bundle), "-o", str(tmp_path / "run" / "out"),
                           "--provider", "replay", "--replay-dir", str(replay),
                           "--kb", str(tmp_path / "kb"))))  # fmt: skip
    assert run["write_back"]["success"], run["write_back"]
    written_back = git("rev-list", f"{before_run}..main", cwd=tmp_path / "kb").stdout.split()
    assert written_back

    # A format-1 store written by C git (which signs too), then upgraded by gitkb.
    old = tmp_path / "old"
    git("init", "-q", "-b", "main", str(old))
    (old / "gitkb.toml").write_text(
        '[store]\nname = "old"\nformat = "gitkb-1"\nschema = "clean-1.3"\n'
    )
    (old / "records").mkdir()
    (old / "records" / "index.json").write_text('{"records": []}\n')
    git("add", "-A", cwd=old)
    git("commit", "-q", "-m", format_message("kb import old", "", [("KB-Action", "import")]),
        cwd=old)  # fmt: skip
    ok(kb("upgrade", "--store", str(old)))

    actions, verified, subjects = set(), set(), set()
    for repo in (tmp_path / "kb", tmp_path / "second", old):
        for line in git("log", "--format=%H %s", "main", cwd=repo).stdout.splitlines():
            sha, subject = line.split(" ", 1)
            actions.add(subject.split()[1])
            checked = verify_commit(repo, sha, signers)
            assert checked.returncode == 0, (subject, checked.stderr)
            assert 'Good "git" signature for alice@example.org' in checked.stderr
            verified.add(sha)
            subjects.add(subject)
    assert {"init", "insert", "attest", "feedback", "retract", "unretract", "trace",
            "import", "upgrade"} <= actions, actions  # fmt: skip
    assert {f"kb insert {card['id']}" for card in cards["cards"]} <= subjects
    assert synced["commits"] and set(synced["commits"]) <= verified, synced
    assert set(written_back) <= verified


def test_a_store_requiring_signatures_refuses_an_unsigned_writer_before_any_work(tmp_path):
    store = Store.init(tmp_path / "kb")
    config = (tmp_path / "kb" / "gitkb.toml").read_text()
    (tmp_path / "kb" / "gitkb.toml").write_text(
        config + "\n[access]\nrequire_signed = true\ncurators = []\nadmins = []\n"
    )
    git("add", "gitkb.toml", cwd=store.location)
    git("commit", "-q", "-m", format_message("kb config access", "", [("KB-Action", "config")]),
        cwd=store.location)  # fmt: skip
    tip = Store.open(store.location).tip
    record = strategy(1)
    for args in (["admit", "-"], ["retract", record["id"], "--reason", "x"],
                 ["curate", "--retire", "--apply"]):  # fmt: skip
        done = kb(*args, "--store", str(store.location), input=dumps(record))
        lines = done.stderr.decode().strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1, lines
        assert lines[0].startswith("gitkb: ") and "require_signed" in lines[0]
        for setting in ("commit.gpgsign", "gpg.format ssh", "user.signingkey"):
            assert setting in lines[0]
    # The optimizer writes into --kb (attestations, feedback, the write-back): refused
    # before the bundle is frozen or the baseline measured, warm start or not.
    bundle = make_bundle(tmp_path)
    replay = replay_dir(tmp_path, variant(COST=50.0))
    for n, warm in enumerate((["--warm-start", "off"], ["--warm-start", "on"])):
        out = tmp_path / f"out{n}"
        done = kb("optimize", str(bundle), "-o", str(out), "--provider", "replay",
                  "--replay-dir", str(replay), *warm, "--kb", str(store.location))  # fmt: skip
        lines = done.stderr.decode().strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1, lines
        assert lines[0].startswith("gitkb: ") and "require_signed" in lines[0]
        assert not out.exists()
    assert Store.open(store.location).tip == tip
    # A dry run writes nothing and is not refused.
    assert (
        json.loads(ok(kb("curate", "--retire", "--store", str(store.location))))["applied"] is False
    )


def test_a_contributor_s_technique_cards_are_refused_for_want_of_a_curator(tmp_path):
    keys = tmp_path / "keys"
    alice, bob = make_key(keys, "alice"), make_key(keys, "bob")
    store = Store.init(tmp_path / "kb")
    where = ["--store", str(store.location)]
    here = ("-C", str(store.location))
    sign_with(alice, *here)
    ok(kb("access", "init", "--admin", "alice", "--key", f"{alice}.pub", *where))
    ok(kb("access", "add", "bob", "--key", f"{bob}.pub", *where))  # a contributor
    on = Store.open(store.location).tip
    sign_with(bob, *here)
    for campaign in CAMPAIGNS:
        ok(kb("mine", str(rmsnorm_trace(tmp_path / "traces", *campaign)), *where))
    mined = Store.open(store.location).tip
    done = kb("check", f"{on}..{mined}", *where)
    assert done.returncode == 0, done.stdout.decode()  # a contributor may mine

    cards = json.loads(ok(kb("curate", "--cards", "--apply", *where)))
    assert cards["written"] > 0, cards
    done = kb("check", f"{mined}..main", "--format", "json", *where)
    assert done.returncode == 1, done.stdout.decode()
    refusals = json.loads(done.stdout)["refusals"]
    assert len(refusals) == cards["written"]
    for refusal in refusals:
        assert refusal["rule"] == "access", refusal
        assert "bob: a technique card (" in refusal["line"], refusal
        assert "needs a curator's signature (bob is a contributor" in refusal["line"], refusal
