"""Nothing private anywhere (docs/trace-format.md, rule 11): a trace whose subjects, memory
descriptions and kernel comments hold a private path, a user name, an e-mail address and a
denylisted project name is mined into a real store; every record is admitted with the
text scrubbed, and no served field, id, file name or committed report holds any of it."""

from __future__ import annotations

import json

import pytest
from helpers import kb

from gitkb.gates.raw_isolation import served
from gitkb.mine.pipeline import mine
from gitkb.store import Store
from gitkb.testing.trace_builder import Trace
from gitkb.testing.trace_files import kernel_source, memory
from gitkb.trace.scrub import Scrubber, scrub, user_names

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

LABEL = "kernel_opt_007_rmsnorm"
PRIVATE = ("alice", "acme", "/home", "example.com", "zephyr")
PATH = "/home/alice/work/kernels/rmsnorm_fast.py"


def private_kernel(n: int, note: str) -> str:
    return kernel_source(n).replace(
        "    row = tl.program_id(0)", f"    # {note}\n    row = tl.program_id(0)"
    )


@pytest.fixture
def denylist(tmp_path, monkeypatch):
    path = tmp_path / "denylist.txt"
    path.write_text("# private project names\nAcmeTurbo\nacme\nzephyr-internal\n")
    monkeypatch.setenv("GITKB_DENYLIST", str(path))
    return path


def private_trace(tmp_path) -> Trace:
    t = Trace(tmp_path / LABEL)
    t.setup(
        name="rmsnorm", description="Row-wise RMSNorm, first written on the zephyr-internal rig"
    )
    t.legacy_keep(0, 100.0, "baseline rmsnorm with three passes over each row")
    t.commit(
        "v1: committed (+20.0%) vectorized loads for AcmeTurbo",
        {
            "kernel.py": private_kernel(1, f"copied from {PATH}"),
            "memory/v1.json": memory(
                "v1", 80.0, description=f"vectorized loads, copied from {PATH}"
            ),
        },
    )
    t.legacy_revert(
        2,
        95.0,
        "slower on the acme cluster",
        [
            "splitting each row across two programs on sm_90 spills registers because every "
            f"program holds 64 fp32 partial sums (notes in {PATH})"
        ],
    )
    t.commit(
        "v3: committed (+25.0%) acme-tuned epilogue, ask alice@acme.example.com",
        {
            "kernel.py": private_kernel(
                3, f"final AcmeTurbo kernel, from {PATH}, mail alice@acme.example.com"
            ),
            "memory/v3.json": memory(
                "v3", 60.0, description="fused the epilogue into the AcmeTurbo reduction loop"
            ),
        },
    )
    t.write()
    return t


def leaks(text: str) -> list[str]:
    low = text.lower()
    return [word for word in PRIVATE if word in low]


def test_private_text_is_scrubbed_everywhere_and_no_record_is_lost(tmp_path, store, denylist):
    trace = private_trace(tmp_path)
    result = mine(trace.path, store=store)
    actions = {o.seg_id: o.action for o in result.outcomes}
    assert actions == {
        "strategy-v1": "insert",
        "strategy-v3": "insert",
        "anti-v2-01": "insert",
        "refk-final": "insert",
    }, [(o.seg_id, o.note) for o in result.outcomes]
    records = list(store.record_files())
    assert len(records) == 4
    for record in records:
        assert not leaks(record.path), record.path
        assert not leaks(json.dumps(served(record.data))), record.path
    reference = next(r.data for r in records if r.data["type"] == "reference-kernel")
    snippet = reference["payload"]["implementation"]["snippet"]
    assert "# final a private identifier kernel, from a local path, mail an address" in snippet
    strategy = next(r.data for r in records if r.data["id"].endswith("-s01"))
    assert "vectorized-loads-copied-from" in strategy["id"]
    reports = list(store.repo.list_tree(store.tip, f"reports/{LABEL}"))
    assert {p.rsplit("/", 1)[-1] for p, _ in reports} >= {"recon.md", "partition.md", "mine.md"}
    for path, sha in reports:
        assert not leaks(store.repo.blob(sha).decode()), path
    check = kb("validate", str(store.location))
    assert check.returncode == 0, check.stdout.decode()


def test_gates_without_the_denylist_still_accept_what_was_scrubbed(
    tmp_path, store, denylist, monkeypatch
):
    """A server without the private denylist rebuilds packets that still hold the private
    words; the records quoting scrubbed comments still pass verbatim there."""
    mine(private_trace(tmp_path).path, store=store)
    monkeypatch.delenv("GITKB_DENYLIST")
    check = kb("validate", str(store.location), "--full")
    assert check.returncode == 0, check.stdout.decode()
    assert "0 of 19 gates failed" in check.stdout.decode()


def test_a_label_holding_a_private_word_is_refused(tmp_path, store, denylist):
    trace = private_trace(tmp_path)
    done = kb("mine", str(trace.path), "--store", str(store.location), "--label", "acme_rmsnorm")
    assert done.returncode == 2 and b"--label" in done.stderr
    assert store.repo.refs("refs/kb/traces") == {}


def test_scrubber_strengths():
    scrubber = Scrubber(("secretproj",))
    scrubber.learn("see /home/bob/runs/a.log and /Users/carol/x")
    assert scrubber.users == {"bob", "carol"}
    text = "Bob's /opt/tools/bin/run and /tmp on SecretProj, bob@corp.example.com, notes.md"
    assert scrubber.private(text) == (
        "a user's a local path and a local path on a private identifier, an address, notes.md"
    )
    assert scrubber.served(text).endswith("an address, a document")
    assert scrubber.name("tiling from /home/bob/x.py for secretproj") == "tiling from for"
    # URLs, ratios and relative paths are not local paths
    assert scrubber.private("https://example.org/a/b, 4 bytes/s, profiles/v3") == (
        "https://example.org/a/b, 4 bytes/s, profiles/v3"
    )
    assert user_names("/home/agent/work and /home/runner/x") == set()
    assert scrub("mail ann@b.example.com about docs/x.md", denylist=()) == (
        "mail an address about a document"
    )


def test_unreadable_denylist_fails_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("GITKB_DENYLIST", str(tmp_path / "missing.txt"))
    with pytest.raises(Exception, match="denylist file"):
        Scrubber()
    assert Store  # the store module imports without the denylist
