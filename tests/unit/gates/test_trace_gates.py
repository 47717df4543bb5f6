"""Tests for the eight trace gates (docs/record-format.md §7, journal-provenance included).

Evidence always comes from a real store: traces written with the trace builder (the
example, ``gitkb.testing.trace``, or one built here with ``gitkb.testing.trace_builder``)
and copied under ``refs/kb/traces/<label>``; packets are rebuilt from those objects by the
mining pipeline, never handed to a gate from scratch files.
"""

from __future__ import annotations

import copy
import subprocess

import pytest
from helpers import git, kb, needs_conformance

from gitkb import record as rec
from gitkb.gates import GateContext, run_gates
from gitkb.gates import journal_provenance as jp
from gitkb.gates import no_fabrication as nf
from gitkb.gates.registry import GATE_MODULES, all_gates, by_name
from gitkb.store import Store
from gitkb.store.gating import gate_context
from gitkb.store.validation import context_for
from gitkb.testing import trace as sample_trace
from gitkb.testing.injections import example_context, injection_outcomes
from gitkb.testing.trace_builder import Trace
from gitkb.testing.trace_files import Symlink, kernel_source
from gitkb.testing.traces import legacy_trace, long_horizon_trace
from gitkb.vcs.repository import Repository

TRACE_GATES = (
    "profile",
    "layout",
    "verbatim",
    "no-fabrication",
    "provenance",
    "ncu-attribution",
    "store-overlap",
    "journal-provenance",
)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The example store (trace ref + first milestone admitted) and the second milestone."""
    return sample_trace.sample_store(tmp_path_factory.mktemp("sample"))


def ctx_for(store, *records: dict, admission: str | None = "insert") -> GateContext:
    files = [rec.load(rec.path_for(r), rec.dumps(r)) for r in records]
    view = store.view() if store is not None else None
    return GateContext(records=files, store=view, admission=admission, full=True)


def run(name: str, ctx: GateContext):
    return by_name([name])[0].run(ctx)


def candidate(sample) -> dict:
    return copy.deepcopy(sample[1].data)


# --- registry and injection suite ---------------------------------------------------------


def test_registry_appends_the_eight_trace_gates_in_spec_order():
    gates = all_gates()
    assert len(GATE_MODULES) == 19
    assert tuple(g.name for g in gates[11:]) == TRACE_GATES
    assert all(g.family == "trace" and g.record_level for g in gates[11:])
    for gate in gates[11:]:
        assert len(gate.injections) >= 3, gate.name
        assert all(case.name.startswith(gate.name + "/") for case in gate.injections)


@pytest.mark.slow
def test_every_trace_injection_fires_on_real_evidence_and_the_sample_is_clean():
    outcomes = injection_outcomes(by_name(list(TRACE_GATES)))
    assert [o for o in outcomes if o.status not in ("FIRED", "CLEAN")] == []
    baselines = [o for o in outcomes if o.case == "(valid sample)"]
    assert [o.gate for o in baselines] == list(TRACE_GATES)
    assert sum(o.status == "FIRED" for o in outcomes) >= 3 * len(TRACE_GATES)


@pytest.mark.slow
def test_cli_injection_tests_cover_all_nineteen_gates():
    done = kb("validate", "--injection-tests")
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert out.rstrip().endswith("0 problems")
    for name in TRACE_GATES:
        assert f"FIRED  {name:20} {name}/" in out


# --- end to end: real packets from the store -----------------------------------------------


@pytest.mark.slow
def test_a_store_of_mined_records_passes_all_nineteen_gates(tmp_path):
    store, second = sample_trace.sample_store(tmp_path)
    store.admit(second.raw, "insert", source="example")
    results = run_gates(gate_context(store, full=True), all_gates())
    assert {r.gate.name: r.status for r in results} == {g.name: "PASS" for g in all_gates()}
    # The same, from the command line, on a bare store.
    done = kb("validate", str(store.location), "--full")
    assert done.returncode == 0, done.stdout.decode()
    assert "0 of 19 gates failed" in done.stdout.decode()


@pytest.mark.slow
def test_git_kb_mine_output_passes_all_nineteen_gates(tmp_path):
    assert kb("init", "kb", cwd=tmp_path).returncode == 0
    for build, label in ((legacy_trace, "kernel_opt_001_softmax"), (long_horizon_trace, "lh")):
        build(tmp_path / label)
        mined = kb("mine", label, "--store", "kb", cwd=tmp_path)
        assert mined.returncode == 0, mined.stderr.decode()
    store = Store.open(tmp_path / "kb")
    granular = [r for r in store.record_files() if "evidence_extra" in r.data["evidence"]["raw"]]
    assert granular, "the long-horizon trace yields granular records"
    results = run_gates(gate_context(store, full=True), all_gates())
    assert {r.gate.name: r.status for r in results} == {g.name: "PASS" for g in all_gates()}


@pytest.mark.slow
def test_admission_refuses_a_record_the_trace_does_not_back(tmp_path):
    store, second = sample_trace.sample_store(tmp_path)
    forged = copy.deepcopy(second.data)
    forged["worth"]["gain"]["pct"] = 35.5
    with pytest.raises(Exception) as refused:
        store.admit(rec.dumps(forged), "insert", source="forged.json")
    assert "no-fabrication: worth.gain.pct: 35.5 is not stated" in str(refused.value)
    assert second.data["id"] not in store.view()


@pytest.mark.slow
def test_an_injection_context_mutates_its_own_copy_of_the_packets(sample):
    from gitkb.gates import trace_evidence
    from gitkb.trace.sources import StoreTraces

    store, _ = sample
    ctx = ctx_for(store, candidate(sample))
    ctx.mutable_evidence = True  # as run_injections marks its contexts
    mine = trace_evidence.packets(ctx, sample_trace.LABEL)
    mine[1].diff = None
    assert StoreTraces(store.view()).packets(sample_trace.LABEL)[1].diff
    assert trace_evidence.packets(ctx_for(store, candidate(sample)), sample_trace.LABEL)[1].diff


# --- what the trace gates do not check ------------------------------------------------------


def test_records_that_name_no_trace_are_skipped_with_the_reason():
    results = run_gates(example_context(), by_name(list(TRACE_GATES)))
    assert {r.status for r in results} == {"SKIP"}
    assert all("no mined record" in r.reason for r in results)


def test_conformance_sample_passes_or_skips_every_trace_gate():
    results = run_gates(context_for(needs_conformance(), full=True), by_name(list(TRACE_GATES)))
    assert {r.status for r in results} <= {"PASS", "SKIP"}


def test_without_a_store_or_trace_only_the_record_level_checks_run(sample):
    ctx = ctx_for(None, candidate(sample))
    statuses = {name: run(name, ctx) for name in TRACE_GATES}
    assert statuses["profile"].status == statuses["layout"].status == "PASS"
    for name in TRACE_GATES[2:]:
        assert statuses[name].status == "SKIP", name
        assert "no store" in statuses[name].reason or "no trace" in statuses[name].reason


# --- profile and layout ----------------------------------------------------------------------


def test_profile_reports_at_most_four_errors_per_record(sample):
    data = candidate(sample)
    data.update(level="generic", status="nonsense")
    data["evidence"]["raw"]["page_path"] = "x.md"
    data["evidence"]["summary"].pop("measured_on")
    data["worth"]["gain"].pop("kind")
    data["evidence"]["raw"]["version"] = 3
    findings = run("profile", ctx_for(sample[0], data)).findings
    assert len(findings) == 4


def test_layout_fills_any_and_misc_for_missing_scope(sample):
    data = candidate(sample)
    data["retrieval"]["scope"].update(dsl=None, operator_family=None)
    ctx = ctx_for(sample[0], data)
    ctx.records[0].path = f"records/strategy/nvidia/hopper/any/misc/{data['id']}.json"
    assert run("layout", ctx).status == "PASS"
    ctx.records[0].path = f"records/strategy/nvidia/hopper/triton/misc/{data['id']}.json"
    assert (
        "expected records/strategy/nvidia/hopper/any/misc/"
        in run("layout", ctx).findings[0].message
    )


# --- verbatim ---------------------------------------------------------------------------------


def test_verbatim_ignores_short_lines_and_whitespace(sample):
    data = candidate(sample)
    snippet = data["payload"]["implementation"]["snippet"]
    data["payload"]["implementation"]["snippet"] = "+    if x:\n" + snippet.replace(
        "    ", "\t"
    ).replace(" = ", "   =   ")
    assert run("verbatim", ctx_for(sample[0], data)).status == "PASS"


def test_verbatim_counts_missing_lines_per_snippet(sample):
    data = candidate(sample)
    data["payload"]["attempted_code"] = "x = made_up_function(1)\ny = another_invented_call()\n"
    finding = run("verbatim", ctx_for(sample[0], data)).findings
    assert [(f.field, f.message[:30]) for f in finding] == [
        ("payload.attempted_code", "2 quoted lines not in the trac")
    ]


# --- no-fabrication ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("B200 float32 f16 v1.2 x2", set()),
        ("sm_90", {"90"}),
        ("4B", {"4"}),
        ("1,234", {"1", "234"}),
        ("1e-05", {"1", "5"}),
        ("-3.50 and 59.140", {"3.5", "59.14"}),
        ("1234567", {"1.23457e+06", "1234567"}),
        ("3.14159265", {"3.14159"}),
        ("5.0", {"5"}),
    ],
)
def test_number_extraction_and_normalisation(text, numbers):
    assert nf.magnitudes(text) == numbers


def test_no_tolerance_beyond_six_significant_digits():
    pool = nf.magnitudes("59.14 and 1234567.4")
    assert not nf.normalised("59.1") & pool
    assert nf.normalised("1234568") & pool  # agrees to six significant digits


def test_quoted_code_and_flags_are_not_audited(sample):
    data = candidate(sample)
    data["payload"]["implementation"]["snippet"] += "+    z = 31337\n"
    data["payload"]["implementation"]["dispatch_snippet"] = "BLOCK = 777"
    data["worth"]["gain"]["comparable"] = True
    data["worth"]["rank"]["score"] = 0.4242  # worth.rank is not audited
    assert run("no-fabrication", ctx_for(sample[0], data)).status == "PASS"
    data["payload"]["mechanism"] += " It saves 31337 cycles."
    (finding,) = run("no-fabrication", ctx_for(sample[0], data)).findings
    assert (finding.field, finding.message) == (
        "payload.mechanism",
        "31337 is not stated by the trace's evidence",
    )


# --- provenance ----------------------------------------------------------------------------


def test_provenance_resolves_commits_through_the_store_only(sample, tmp_path):
    store, _ = sample
    data = candidate(sample)
    assert run("provenance", ctx_for(store, data)).status == "PASS"
    # A store without the trace ref cannot vouch for the commit, whatever else it holds.
    bare = Store.init(tmp_path / "other", bare=True)
    (finding,) = run("provenance", ctx_for(bare, data)).findings
    assert finding.message == (
        f"trace {sample_trace.LABEL} is not in the store: "
        f"mine it or push refs/kb/traces/{sample_trace.LABEL}"
    )


def test_provenance_refuses_labels_that_are_not_ref_names(sample):
    data = candidate(sample)
    data["evidence"]["raw"]["source_repo"] = "../../heads/main"
    (finding,) = run("provenance", ctx_for(sample[0], data)).findings
    assert "not a usable trace label" in finding.message


# --- ncu-attribution -----------------------------------------------------------------------


def test_profiler_basis_passes_with_a_usable_capture_and_others_are_not_checked(sample):
    data = candidate(sample)
    assert data["evidence"]["summary"]["bottleneck_evidence"]["basis"] == "profiler"
    assert run("ncu-attribution", ctx_for(sample[0], data)).status == "PASS"
    first = copy.deepcopy(sample[0].read_record("nvidia.h100.triton.softmax.online-rescale-s01"))
    first.data["evidence"]["summary"]["bottleneck_evidence"]["basis"] = "profiler"
    (finding,) = run("ncu-attribution", ctx_for(sample[0], first.data)).findings
    assert "the packet cites no capture" in finding.message


# --- store-overlap -------------------------------------------------------------------------


def test_store_overlap_depends_on_the_admission_action(sample):
    store, _ = sample
    live = store.read_record("nvidia.h100.triton.softmax.online-rescale-s01").data
    assert run("store-overlap", ctx_for(store, live, admission="insert")).findings
    assert run("store-overlap", ctx_for(store, live, admission="confirm")).status == "PASS"
    # Validating the store itself: the live record is its own index entry.
    assert run("store-overlap", ctx_for(store, live, admission=None)).status == "PASS"


# --- journal-provenance: a C-git trace with hostile evidence --------------------------------

HOSTILE = "kernel_opt_003_hostile"
BIG = 9 * 1024 * 1024
LARGE = 7 * 1024 * 1024


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A trace whose tree holds a symlinked journal, an oversized file and large ones."""
    work = tmp_path_factory.mktemp("hostile")
    t = Trace(work / HOSTILE)
    t.setup()
    journal = {"journal": {"experiments": [{"name": "a"}, {"name": "b"}]}}
    t.commit(
        "episode 1: promote verified long-horizon candidate",
        {
            "kernel.py": kernel_source(1),
            "memory/long_horizon_e0001.json": journal,
            "memory/v1.json": {"experience": {"experiments": [{"index": 4, "name": "x"}]}},
            "memory/link.json": Symlink("../../../etc/passwd"),
            "linked": Symlink("memory"),
            "memory/big.json": b" " * BIG,
            "archive/large.bin": b"\0" * LARGE,
        },
    )
    path = t.write(bare=True)
    tip = git("rev-parse", "main", cwd=path).stdout.strip()
    store = Store.init(work / "store", bare=True)
    store.repo.fetch_into(path, tip, f"refs/kb/traces/{HOSTILE}")
    return store, tip


def granular(tip: str, **extra) -> dict:
    data = copy.deepcopy(
        sample_trace.mined_records(sample_trace.ExampleTrace(None, "", {"v1": tip, "v2": tip}))[0]
    )
    data["evidence"]["raw"]["source_repo"] = HOSTILE
    data["evidence"]["raw"]["evidence_extra"] = {
        "journal": "memory/long_horizon_e0001.json",
        "experiments": [1, 2],
        "promotion_commit": tip,
        **extra,
    }
    return data


def journal_messages(hostile, **extra) -> list[str]:
    store, tip = hostile
    return [
        f.message
        for f in run("journal-provenance", ctx_for(store, granular(tip, **extra))).findings
    ]


@pytest.mark.slow
def test_journal_backs_declared_experiments(hostile):
    assert journal_messages(hostile) == []
    assert journal_messages(hostile, journal="memory/v1.json", experiments=[4]) == []
    assert journal_messages(hostile, experiments=[1, 3]) == [
        "experiment 3 is not in memory/long_horizon_e0001.json (2 experiments)"
    ]


def test_revalidation_commit_counts_and_one_is_required(hostile):
    _, tip = hostile
    assert journal_messages(hostile, promotion_commit=None, revalidation_commit=tip) == []
    assert journal_messages(hostile, promotion_commit=None) == [
        "names no promotion_commit or revalidation_commit"
    ]


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("memory/link.json", "goes through a symlink"),
        ("linked/long_horizon_e0001.json", "goes through a symlink"),
        ("/home/agent/journal.json", "is absolute"),
        ("memory/./v1.json", "not a plain relative path"),
        ("../journal.json", "leaves the trace root"),
        ("memory/nope.json", "is not a file of the trace"),
    ],
)
def test_unsafe_or_missing_journal_paths_are_refused(hostile, path, says):
    (message,) = journal_messages(hostile, journal=path)
    assert says in message


def test_size_limits_are_decided_before_any_content_is_read(hostile, monkeypatch):
    def no_reading(*args, **kwargs):
        raise AssertionError("evidence content was read")

    monkeypatch.setattr(Repository, "read", no_reading)
    monkeypatch.setattr(Repository, "blob", no_reading)
    (message,) = journal_messages(hostile, journal="memory/big.json")
    assert message == f"memory/big.json is {BIG} bytes, over the {8 * 1024 * 1024}-byte limit"
    (message,) = journal_messages(hostile, evidence_files=["archive/large.bin"] * 5)
    total = int(message.split()[3])
    assert total > 5 * LARGE and message.endswith("over the 33554432-byte limit")


def test_a_promotion_record_cannot_skip_the_gate_by_omitting_its_journal(sample):
    """Leaving evidence_extra out of a record citing a promotion commit is a failure; a
    record of a legacy commit needs none."""
    data = candidate(sample)
    del data["evidence"]["raw"]["evidence_extra"]
    (finding,) = run("journal-provenance", ctx_for(sample[0], data)).findings
    assert finding.message.startswith("cites a long-horizon promotion commit but no journal")
    legacy = copy.deepcopy(sample[0].read_record("nvidia.h100.triton.softmax.online-rescale-s01"))
    assert "evidence_extra" not in legacy.data["evidence"]["raw"]
    assert run("journal-provenance", ctx_for(sample[0], legacy.data, admission=None)).status == (
        "PASS"
    )


# --- the VCS layer's object sizes -------------------------------------------------------------


def test_blob_size_reads_loose_packed_and_delta_headers(tmp_path):
    repo_path = tmp_path / "r"
    git("init", "-q", str(repo_path))
    body = "".join(f"line {i} of a file that deltas well\n" for i in range(5000))
    for i, text in enumerate([body, body + "one more line\n"]):
        (repo_path / "f.txt").write_text(text)
        git("add", "f.txt", cwd=repo_path)
        git("commit", "-qm", f"c{i}", cwd=repo_path)
    shas = git("rev-list", "--objects", "--all", cwd=repo_path).stdout.split()
    shas = [s for s in shas if len(s) == 40]

    def expected(sha):
        return int(git("cat-file", "-s", sha, cwd=repo_path).stdout)

    assert all(Repository.open(repo_path).blob_size(s) == expected(s) for s in shas)
    subprocess.run(["git", "gc", "-q", "--aggressive"], cwd=repo_path, check=True)
    verify = git("verify-pack", "-v", *map(str, (repo_path / ".git/objects/pack").glob("*.idx")))
    assert "chain length = 1" in verify.stdout  # one object is stored as a delta
    assert all(Repository.open(repo_path).blob_size(s) == expected(s) for s in shas)


def test_journal_experiment_ids_by_position_or_canonical_index():
    assert jp.journal_experiments(b'{"experiments": [{"name": "a"}, "b", {}]}') == {1, 2, 3}
    assert jp.journal_experiments(b'{"experience": {"experiments": [{"index": 7}]}}') == {7}
    assert jp.journal_experiments(b"not json") is None
    assert jp.journal_experiments(b'{"experiments": "none"}') is None
