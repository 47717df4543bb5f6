"""Every gitkb writer signs when git is set to sign, and git's own ``verify-commit``
accepts each commit; a store that requires signatures refuses an unsigned writer at once."""

from __future__ import annotations

import json

import pytest
from helpers import git, kb
from helpers.campaigns import CAMPAIGNS, rmsnorm_trace
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
    trace = rmsnorm_trace(tmp_path / "traces", *CAMPAIGNS[0])
    ok(kb("mine", str(trace), *where))

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

    actions = set()
    for repo in (tmp_path / "kb", tmp_path / "second", old):
        for line in git("log", "--format=%H %s", "main", cwd=repo).stdout.splitlines():
            sha, subject = line.split(" ", 1)
            actions.add(subject.split()[1])
            checked = verify_commit(repo, sha, signers)
            assert checked.returncode == 0, (subject, checked.stderr)
            assert 'Good "git" signature for alice@example.org' in checked.stderr
    assert {"init", "insert", "attest", "feedback", "retract", "unretract", "trace",
            "import", "upgrade"} <= actions  # fmt: skip


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
