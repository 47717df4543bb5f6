"""Tests for the record-content store gates: anonymization, raw-isolation, relations,
self-contained, no-cross-reference and established-fact (spec 4.3-4.5, 4.7-4.9).

Each case mutates a deep copy of one shipped example record and runs one gate's
check on a context that holds only that record (or, for relations, the examples).
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import pytest
from helpers import CONFORMANCE

from gitkb.gates import (
    GateContext,
    anonymization,
    established_fact,
    no_cross_reference,
    raw_isolation,
    relations,
    run_gates,
    run_injections,
    self_contained,
)
from gitkb.gates.registry import GATE_MODULES, all_gates
from gitkb.record import RecordFile
from gitkb.store.validation import context_for
from gitkb.testing.injections import example_context

SAMPLE = CONFORMANCE
GATE_ORDER = (
    "schema",
    "ids",
    "anonymization",
    "raw-isolation",
    "relations",
    "index",
    "self-contained",
    "no-cross-reference",
    "established-fact",
)
# GPU-wiki's nine, then gitkb's own store gates.
STORE_GATES = (*GATE_ORDER, "technique-card", "technique-claim")
LONG_ENOUGH = "the compiler then spills the row to local memory, "  # pads a mechanism past 40


@functools.cache
def _examples() -> GateContext:
    return example_context()


def example(record_type: str) -> dict:
    """A deep copy of the shipped example record of one type."""
    for record_file in _examples().records:
        if record_file.data["type"] == record_type:
            return copy.deepcopy(record_file.data)
    raise AssertionError(f"no {record_type} example")


def findings(gate_module, *records: dict) -> list:
    """The findings of one gate's check on a context holding ``records``."""
    files = [RecordFile(f"records/x/{r.get('id', 'x')}.json", b"", r) for r in records]
    return list(gate_module.check(GateContext(records=files, full=True)))


def fields(gate_module, *records: dict) -> list[str]:
    return [f.field for f in findings(gate_module, *records)]


def store_gates() -> tuple:
    """The ten store gates (the trace gates have their own tests, on a mined sample)."""
    return tuple(g for g in all_gates() if g.family == "store")


def _full(ctx: GateContext) -> GateContext:
    ctx.full = True
    return ctx


# --- the registry and the injection cases -------------------------------------------------


def test_registry_lists_the_nine_store_gates_in_spec_order():
    assert len(GATE_MODULES) == 19
    assert tuple(g.name for g in store_gates()) == STORE_GATES
    assert tuple(g.name for g in all_gates()[:9]) == GATE_ORDER


def test_record_level_flags():
    gates = {g.name: g for g in all_gates()}
    for name in ("anonymization", "raw-isolation", "self-contained", "no-cross-reference"):
        assert gates[name].record_level and not gates[name].full_only
    assert gates["established-fact"].record_level
    assert not gates["relations"].record_level and gates["relations"].full_only


@pytest.mark.slow
def test_every_injection_fires_and_every_baseline_is_clean():
    outcomes = run_injections(example_context(), store_gates())
    assert [o for o in outcomes if o.status not in ("FIRED", "CLEAN")] == []
    for gate in store_gates():
        cases = [o for o in outcomes if o.gate == gate.name and o.case != "(valid sample)"]
        assert len(cases) >= 3, gate.name
        assert all(o.case.startswith(gate.name + "/") for o in cases)


def test_examples_pass_every_gate():
    results = run_gates(_full(example_context()), store_gates())
    assert {r.gate.name: r.status for r in results} == dict.fromkeys(STORE_GATES, "PASS")


@pytest.mark.slow
def test_conformance_sample_passes_all_nine_gates():
    if not (SAMPLE / "records").is_dir():
        pytest.skip("the conformance sample (../shared) is not present")
    results = run_gates(context_for(SAMPLE, full=True), store_gates())
    not_passed = {r.gate.name: r.status for r in results if r.status != "PASS"}
    assert not_passed == {}, [f.line() for r in results for f in r.findings[:3]]


# --- anonymization ------------------------------------------------------------------------


def _anti_with_observed(text: str) -> dict:
    record = example("anti-strategy")
    record["payload"]["observed"] = text
    return record


@pytest.mark.parametrize(
    ("text", "leaks"),
    [
        ("profile in /home/ab/run3", True),
        ("copied from /Users/kim.lee-2/x", True),
        ("ran as /root/work", True),
        ("the /root/ folder", False),  # nothing after the slash
        ("/homes/ab is not a home directory", False),
        ("mail ab@x.io for access", True),
        ("mail a@b.co for access", False),  # local part too short
        ("mail ab@x.IO", False),  # top-level part must be lowercase
        ("mail ab@x.i", False),  # top-level part too short
        ("q@ab@x.io", False),  # local part glued to '@'
        ("x.y+tag@mail-host.dev.", True),
        ("see README.md", True),
        ("see docs/tuning-notes.md first", True),
        ("the notes.mdx file", False),  # '.md' must end at a word boundary
        ("a bare .md suffix", False),
        ("nothing private here", False),
    ],
)
def test_anonymization_leak_patterns(text, leaks):
    assert bool(findings(anonymization, _anti_with_observed(text))) is leaks


def test_anonymization_message_names_the_match_and_field():
    [finding] = findings(anonymization, _anti_with_observed("profile in /home/ab"))
    assert finding.field == "payload.observed"
    assert finding.message == "absolute path '/home/ab' in payload.observed"


def test_anonymization_counts_each_match():
    record = _anti_with_observed("/home/ab and /home/cd, ab@x.io")
    assert len(findings(anonymization, record)) == 3


@pytest.mark.parametrize(
    ("snippet", "leaks"),
    [
        ("x = load('/home/ab/data.bin')", False),  # code itself is not scanned
        ("x = 1  # from /home/ab/run", True),  # the text after '#'
        ("# see /Users/kim", True),
        ("// from /root/kernels", True),
        ("/* ab@x.io */", True),
        ("   * notes.md", True),  # stripped, then a '*' comment line
        ("+    # copied from /Users/kim/softmax.py", True),  # a diff line with a comment
        ("-    y = f('/home/ab')", False),
        ("s = 'ab@x.io'", False),
    ],
)
def test_anonymization_reduces_code_to_comments(snippet, leaks):
    record = example("strategy")
    record["payload"]["implementation"]["snippet"] = snippet
    assert bool(findings(anonymization, record)) is leaks


def test_anonymization_code_keys_cover_nested_values_and_dispatch_snippets():
    record = example("reference-kernel")
    record["payload"]["implementation"]["dispatch_snippet"] = "k[(n,)](x)  # tuned in /home/ab"
    assert fields(anonymization, record) == ["payload.implementation.dispatch_snippet"]
    record = example("strategy")
    record["payload"]["config"] = {"attempted_code": {"lines": ["open('/home/ab')", "# /root/x"]}}
    assert fields(anonymization, record) == ["payload.config.attempted_code.lines[1]"]


def test_anonymization_comment_text():
    code = "  # whole\nx = 1 # tail # more\ny = 2\n// c\n * star\n/* block */"
    assert anonymization.comment_text(code) == "# whole\n tail # more\n// c\n* star\n/* block */"


@pytest.mark.parametrize(
    ("path", "scanned"),
    [
        (("worth", "gain", "note"), True),
        (("evidence", "summary", "measured_on", "gpu"), True),
        (("retrieval", "locator", "kernel_source"), True),
        (("evidence", "raw", "detail_file"), False),
        (("worth", "rank", "formula"), False),
    ],
)
def test_anonymization_scanned_subtrees(path, scanned):
    record = example("strategy")
    node = record
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = "/home/ab/x"
    assert bool(findings(anonymization, record)) is scanned


def test_anonymization_ignores_keys_and_numbers():
    record = example("strategy")
    record["payload"]["config"] = {"/home/ab": 1, "ab@x.io": 2.5}
    assert findings(anonymization, record) == []


@pytest.mark.parametrize(
    ("mutate", "leaks"),
    [
        (lambda r: r.update(payload=["x", 3, {"observed": "/home/ab"}]), True),  # still scanned
        (lambda r: r["worth"].update(gain="owner ab@x.io"), True),
        (lambda r: r.update(retrieval=None, evidence=["a"], worth=7), False),
        (
            lambda r: r["payload"].update(implementation={"snippet": 5, "dispatch_snippet": [1]}),
            False,
        ),
    ],
)
def test_anonymization_survives_wrong_types(mutate, leaks):
    record = example("strategy")
    mutate(record)
    assert bool(findings(anonymization, record)) is leaks


@pytest.fixture
def denylist(tmp_path, monkeypatch):
    """Point GITKB_DENYLIST at a file; return a function that (re)writes it."""
    monkeypatch.delenv("ATREX_WIKI_DENYLIST", raising=False)
    path = tmp_path / "denylist.txt"
    monkeypatch.setenv("GITKB_DENYLIST", str(path))

    def write(text: str) -> Path:
        path.write_text(text, encoding="utf-8")
        return path

    return write


def test_denylist_term_found_case_insensitively_once_per_record(denylist):
    denylist("# private customers\n\n  AcmeCorp  \n")
    record = _anti_with_observed("ran on the acmecorp cluster")
    record["payload"]["lesson"] += " (ACMECORP only)"
    [finding] = findings(anonymization, record)
    assert finding.field == "payload.lesson" and "acmecorp" in finding.message  # first in order


def test_denylist_comment_lines_are_not_terms(denylist):
    denylist("#hopper\n")
    assert findings(anonymization, example("anti-strategy")) == []


def test_denylist_applies_to_comment_text_not_code(denylist):
    denylist("initech\n")
    record = example("strategy")
    record["payload"]["implementation"]["snippet"] = "initech_kernel(x)\n# ported from Initech\n"
    assert fields(anonymization, record) == ["payload.implementation.snippet"]


def test_denylist_is_reread_when_the_file_changes(denylist):
    path = denylist("globex\n")
    record = _anti_with_observed("a layernorm run for initrode")
    assert findings(anonymization, record) == []
    denylist("globex\ninitrode\n")
    os.utime(path, ns=(1, 1))  # a new mtime even on coarse-clock filesystems
    assert len(findings(anonymization, record)) == 1


def test_denylist_falls_back_to_the_atrex_variable(tmp_path, monkeypatch):
    path = tmp_path / "atrex.txt"
    path.write_text("hooli\n", encoding="utf-8")
    monkeypatch.delenv("GITKB_DENYLIST", raising=False)
    monkeypatch.setenv("ATREX_WIKI_DENYLIST", str(path))
    assert len(findings(anonymization, _anti_with_observed("Hooli's layernorm"))) == 1


def test_unreadable_denylist_fails_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("GITKB_DENYLIST", str(tmp_path / "missing.txt"))
    [finding] = findings(anonymization, example("anti-strategy"))
    assert "cannot be read" in finding.message


# --- raw-isolation ------------------------------------------------------------------------


def test_served_projection_is_the_contract_form():
    record = example("strategy")
    record["retrieval"]["locator"] = {"kernel_source": "k.py"}
    record["retrieval"]["links"] = {"see_also": []}
    served = raw_isolation.served(record)
    assert list(served) == ["id", "type", "level", "retrieval", "payload", "evidence", "worth"]
    assert "locator" not in served["retrieval"] and "links" not in served["retrieval"]
    assert served["payload"] is record["payload"]
    assert served["evidence"] == {"summary": record["evidence"]["summary"]}
    assert served["worth"]["rank"] == {"score": 0.3, "tier": "promising"}
    assert served["worth"]["gain"] is record["worth"]["gain"]


def test_served_projection_never_raises_on_odd_blocks():
    served = raw_isolation.served({"retrieval": ["x"], "evidence": "e", "worth": {"rank": 1}})
    assert served["retrieval"] == ["x"] and served["evidence"] == {"summary": None}
    assert served["worth"] == {"rank": {"score": None, "tier": None}}


def _strategy_observed(text: str) -> dict:
    record = example("strategy")
    record["payload"]["problem"]["observed_symptom"] = text
    return record


@pytest.mark.parametrize("key", ["git_commit", "source_repo", "detail_file"])
def test_raw_value_echoed_in_payload(key):
    record = example("strategy")
    record["evidence"]["raw"].update(
        detail_file="trace/step4.json", source_repo="softmax-trace", git_commit="5b0d2e7a" * 5
    )
    record["payload"]["problem"]["observed_symptom"] = f"see {record['evidence']['raw'][key]}"
    [finding] = findings(raw_isolation, record)
    assert finding.field == "payload.problem.observed_symptom"
    assert f"evidence.raw.{key}" in finding.message


def test_falsy_raw_values_are_not_searched():
    record = _strategy_observed("null")
    record["evidence"]["raw"].update(git_commit="", source_repo=None)
    assert findings(raw_isolation, record) == []


@pytest.mark.parametrize(
    ("file_paths", "expected"),
    [
        (["kernels/softmax.py"], []),
        ([""], ["evidence.raw.file_paths[0]"]),  # the empty string is in every text
        (["kernels/softmax.py", "softmax_kernel"], ["payload.implementation.core_kernel_name"]),
    ],
)
def test_raw_file_paths(file_paths, expected):
    record = example("strategy")
    record["evidence"]["raw"]["file_paths"] = file_paths
    assert fields(raw_isolation, record) == expected


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"links": 1}, "links"),  # a key named links
        ({"note": "links"}, "note"),  # a value exactly equal to it
        ({"note": "raw"}, "note"),
        ({"locator": None}, "locator"),
        ({"note": 'the "raw'}, "note"),  # JSON writes it as "the \"raw": the text holds "raw"
        ({"note": "the links are fine"}, None),
        ({"note": "raw bytes"}, None),
    ],
)
def test_raw_isolation_quoted_tokens(value, field):
    record = example("strategy")
    record["payload"]["problem"]["shape_contract"] = value
    expected = [] if field is None else [f"payload.problem.shape_contract.{field}"]
    assert fields(raw_isolation, record) == expected


def test_engine_only_blocks_in_their_place_are_not_served():
    record = example("strategy")
    record["retrieval"]["links"] = {"see_also": ["nvidia.h100.triton.softmax.online-softmax-r01"]}
    record["retrieval"]["locator"] = {"kernel_source": "example-softmax-trace"}
    assert findings(raw_isolation, record) == []


def test_served_worth_needs_gain():
    record = example("strategy")
    del record["worth"]["gain"]
    assert fields(raw_isolation, record) == ["worth"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r.update(evidence="raw"),
        lambda r: r["evidence"].update(raw=["a"]),
        lambda r: r["evidence"]["raw"].update(file_paths="kernels/x.py", git_commit=7),
        lambda r: r.update(worth=[1, 2]),
        lambda r: r.update(payload=["x", 1]),
    ],
)
def test_raw_isolation_survives_wrong_types(mutate):
    record = example("strategy")
    mutate(record)
    findings(raw_isolation, record)  # must not raise


# --- relations ----------------------------------------------------------------------------


def _linked(**links) -> GateContext:
    ctx = example_context()
    ctx.records[0].data["retrieval"]["links"] = links
    return ctx


def test_unknown_link_target_fails_only_with_full():
    ctx = _linked(see_also=["nvidia.h100.triton.softmax.no-such-record-s09"])
    assert relations.GATE.run(ctx).status == "SKIP"
    ctx.full = True
    result = relations.GATE.run(ctx)
    assert result.status == "FAIL"
    assert [f.field for f in result.findings] == ["retrieval.links.see_also[0]"]


@pytest.mark.parametrize(
    ("links", "failing"),
    [
        ({"see_also": ["nvidia.h100.triton.softmax.online-softmax-r01"]}, []),
        ({"parent": "nvidia.h100.triton.softmax.online-softmax-r01"}, []),  # one string, one item
        ({"parent": "nvidia.h100.triton.softmax.gone-s00"}, ["parent"]),
        ({"parent": None, "see_also": ["", None]}, []),  # falsy items are not links
        ({"depends_on": [{"id": "x"}, 3]}, ["depends_on[0]", "depends_on[1]"]),
        ({"cited_records": "NVIDIA.H100.TRITON.SOFTMAX.ONLINE-SOFTMAX-R01"}, ["cited_records"]),
    ],
)
def test_relations_link_values(links, failing):
    ctx = _full(_linked(**links))
    assert [f.field for f in relations.check(ctx)] == [f"retrieval.links.{f}" for f in failing]


def test_relations_ignores_links_of_the_wrong_type():
    ctx = _full(example_context())
    ctx.records[0].data["retrieval"]["links"] = ["nvidia.nowhere"]
    ctx.records[1].data["retrieval"] = "none"
    assert list(relations.check(ctx)) == []


# --- self-contained -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("done. us", True),  # a lone '.' is a number part
        ("41.8us", True),
        ("3 MS per call", True),
        ("5 \u00b5s", True),
        ("5 \u03bcs", True),
        ("12\tms", True),
        ("12 users", False),  # no word boundary after 'us'
        ("10 msec", False),
        ("status", False),  # no number before 'us'
        ("1.5x faster", False),
    ],
)
def test_absolute_latency_pattern(text, matches):
    assert self_contained.states_absolute_latency(text) is matches
    record = example("strategy")
    record["worth"]["gain"]["note"] = text
    assert ("worth.gain.note" in fields(self_contained, record)) is matches


@pytest.mark.parametrize(
    ("unit", "is_time"),
    [
        (" MS ", True),
        ("us", True),
        ("\u00b5s", True),
        ("\u03bcs", True),
        ("Sec", True),
        ("s", True),
        ("ns", True),
        ("Cycles", True),
        ("cycle", True),
        ("%", False),
        ("usec", False),
        ("x", False),
        (None, False),
        (3, False),
    ],
)
def test_time_units(unit, is_time):
    assert self_contained.is_time_unit(unit) is is_time
    record = example("strategy")
    record["worth"]["gain"]["metrics"][0]["unit"] = unit
    assert ("worth.gain.metrics[0].unit" in fields(self_contained, record)) is is_time


def _gain_case(pct_state: str, headline: list) -> dict:
    record = example("technique-card")
    gain = record["worth"]["gain"]
    gain.update(basis="reported", primary="latency")
    gain["metrics"] = [
        {"metric": "latency", "direction": "lower-better", "delta_pct": d, "source": "pr-body"}
        for d in headline
    ]
    if pct_state == "absent":
        gain.pop("pct", None)
    else:
        gain["pct"] = None if pct_state == "null" else float(pct_state)
    return record


@pytest.mark.parametrize(
    ("pct", "headline", "passes"),
    [
        ("null", [], True),  # present and null with an empty headline
        ("null", [12.0], False),
        ("absent", [], True),
        ("absent", [12.0], False),
        ("12", [12.0], True),
        ("12", [8.0, 12], True),  # numeric equality, any headline value
        ("12", [], False),  # non-null pct with no primary entry
        ("13", [12.0], False),
    ],
)
def test_pct_consistency(pct, headline, passes):
    record = _gain_case(pct, headline)
    assert ("worth.gain.pct" not in fields(self_contained, record)) is passes


def test_pct_headline_only_counts_the_primary_metric():
    record = _gain_case("12", [12.0])
    record["worth"]["gain"]["metrics"][0]["metric"] = "dram_throughput"
    assert "worth.gain.pct" in fields(self_contained, record)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r["payload"].update(goal=" \n"), "payload.goal"),
        (lambda r: r["payload"]["problem"].update(statement=""), "payload.problem.statement"),
        (lambda r: r["payload"]["problem"].update(target="  "), "payload.problem.target"),
        (lambda r: r["payload"]["problem"].pop("operator"), "payload.problem.operator"),
        (lambda r: r["worth"]["gain"].pop("basis"), "worth.gain.basis"),
        (lambda r: r["worth"]["gain"].update(kind="41.8 us"), "worth.gain.kind"),
        (lambda r: r["worth"]["gain"]["metrics"][0].update(before=53.6), "worth.gain.metrics[0]"),
        (
            lambda r: r["worth"]["gain"]["metrics"][0].update(measured_over="6 shapes, 41.8 us"),
            "worth.gain.metrics[0].measured_over",
        ),
        (lambda r: r["worth"]["gain"]["metrics"][0].pop("source"), "worth.gain.metrics[0].source"),
        (
            lambda r: r["payload"]["trace"]["builds_on"].update(approach=""),
            "payload.trace.builds_on.approach",
        ),
        (
            lambda r: r["payload"]["implementation"].update(snippet="  "),
            "payload.implementation.snippet",
        ),
        (
            lambda r: r["payload"]["implementation"].update(format="source (verbatim)"),
            "payload.implementation.format",
        ),
    ],
)
def test_self_contained_failures(mutate, field):
    record = example("strategy")
    mutate(record)
    assert fields(self_contained, record) == [field]


def test_empty_metric_needs_a_note():
    record = example("strategy")
    record["worth"]["gain"]["regressions"] = [{"metric": "sol", "source": "profiler"}]
    assert fields(self_contained, record) == ["worth.gain.regressions[0]"]
    record["worth"]["gain"]["regressions"][0]["note"] = "no change measured"
    assert fields(self_contained, record) == []


def test_measured_strategy_needs_a_delta():
    record = example("strategy")
    gain = record["worth"]["gain"]
    gain["metrics"][0]["delta_pct"] = None
    gain["pct"] = None
    assert "worth.gain.metrics" in fields(self_contained, record)


def test_operator_and_code_rules_apply_to_strategy_and_reference_kernel_only():
    record = example("technique-card")
    record["level"] = "operator"
    record["payload"]["implementation"] = {"format": "source (verbatim)", "snippet": "+x"}
    assert fields(self_contained, record) == []
    record = example("reference-kernel")
    record["payload"]["implementation"]["format"] = "none"
    record["payload"]["implementation"]["snippet"] = ""
    assert fields(self_contained, record) == []


def test_payload_latencies_are_not_checked():
    record = example("strategy")
    record["payload"]["change"] += " It took 41.8 us instead of 53.6 us."
    assert fields(self_contained, record) == []


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r.update(payload=["goal"]),
        lambda r: r["worth"].update(gain="22%"),
        lambda r: r["worth"]["gain"].update(metrics={"latency": 22}),
        lambda r: r["worth"]["gain"].update(metrics=["22%", 3], pct="22"),
        lambda r: r["payload"].update(trace="x", implementation=[1]),
        lambda r: r["payload"]["problem"].update(goal=5, statement=7),
    ],
)
def test_self_contained_treats_wrong_types_as_findings_not_crashes(mutate):
    record = example("strategy")
    mutate(record)
    assert findings(self_contained, record)


# --- no-cross-reference -------------------------------------------------------------------


def _lesson(text: str) -> dict:
    record = example("anti-strategy")
    record["payload"]["lesson"] = text
    return record


@pytest.mark.parametrize(
    ("text", "fires"),
    [
        ("see mydocs/x", True),  # no boundary needed before docs/
        ("see docs/triton/layernorm.md", True),
        ("as in records/anti-strategy/x.json", True),
        ("the layernorm-notes.md page", True),
        ("docs/ alone", False),
        ("nvidia.b200.gluon.pitfalls.fma-dot", True),
        ("nvidia.any.triton.norm.anti.whole-row-t01", True),
        ("nvidia.b300.cutedsl.kernel-opt.", True),
        ("nvidia.h100.triton.softmax.online-softmax-r01", False),  # product not matched
        ("amd.mi308x.flydsl.pitfalls.lds-bank-conflicts", False),  # other vendors not matched
        ("xnvidia.b200.gluon.pitfalls.fma", False),  # needs a word boundary
        ("NVIDIA.B200.gluon.pitfalls.fma", False),  # case-sensitive
        ("nvidia.b200.gluon", False),
    ],
)
def test_no_cross_reference_patterns(text, fires):
    assert bool(findings(no_cross_reference, _lesson(text))) is fires


def test_no_cross_reference_searches_the_json_text():
    # JSON writes the newline as '\n', so the text reads '\nvidia.b200...' and the id matches.
    assert findings(no_cross_reference, _lesson("\nvidia.b200.gluon.pitfalls.fma"))
    # JSON writes the tab as '\t': 'tnvidia' has no word boundary before 'nvidia'.
    assert not findings(no_cross_reference, _lesson("\tnvidia.b200.gluon.pitfalls.fma"))


def test_snippet_values_are_blanked_before_the_search():
    record = example("strategy")
    record["payload"]["implementation"]["snippet"] = "+ # from docs/x.md and records/y\n"
    assert findings(no_cross_reference, record) == []
    record["payload"]["change"] = "+ # from docs/x.md and records/y\n"  # the same string value
    assert findings(no_cross_reference, record) == []
    record["payload"]["change"] = "ported from docs/x.md"
    assert fields(no_cross_reference, record) == ["payload.change", "payload.change"]


def test_gain_is_searched():
    record = example("strategy")
    record["worth"]["gain"]["note"] = "see records/strategy/x"
    [finding] = findings(no_cross_reference, record)
    assert finding.field == "worth.gain.note"
    assert finding.message == "repository path 'records/strategy/x' in worth.gain.note"


@pytest.mark.parametrize("key", ["source_text", "source_truncated"])
def test_serve_time_fields_are_refused(key):
    record = example("strategy")
    record["payload"]["implementation"][key] = False
    assert fields(no_cross_reference, record) == [f"payload.implementation.{key}"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r.update(payload=["docs/x"]),
        lambda r: r["worth"].update(gain="see docs/x"),
        lambda r: r.update(worth=None),
        lambda r: r["payload"].update(implementation="source_text"),
        lambda r: r["payload"].update(implementation={"snippet": 5, "dispatch_snippet": None}),
    ],
)
def test_no_cross_reference_survives_wrong_types(mutate):
    record = example("strategy")
    mutate(record)
    findings(no_cross_reference, record)  # must not raise


# --- established-fact ---------------------------------------------------------------------


def _mechanism(text: str) -> dict:
    record = example("anti-strategy")
    record["payload"]["established_fact"]["mechanism"] = text
    return record


@pytest.mark.parametrize(
    "phrase",
    [
        # list S (store) items 1-10
        "no improvement found",
        "No improvement over",
        "flat within noise",
        "flat-within noise",
        "flat within-noise",
        "FLAT-WITHIN-NOISE",
        "within noise",
        "all variants were",
        "all 3 approaches tested",
        "all of the trials failed",
        "all the four attempts flat",
        "overall 3 variants were",  # substring semantics
        "tested 12 approaches",
        "reverted to an earlier",
        "hw floor confirmed",
        "HW floor reconfirmed",
        "no kernel change",
        "sanity bench",
        "sanity_bench",
        "stall count",
        "stall_count",
        # list G (wiki-gate) additions
        "consecutive dead-end",
        "consecutive stall",
        "consecutive revert",
    ],
)
def test_non_mechanism_phrases_of_s_and_g(phrase):
    record = _mechanism(LONG_ENOUGH + phrase + " here.")
    assert fields(established_fact, record) == ["payload.established_fact.mechanism"]


@pytest.mark.parametrize(
    "text",
    [
        "all of the five tested variants failed",  # no plural of tries right after <=3 words
        "all of the many new variants were",  # four words in between
        "tested twelve approaches",
        "flat within  noise",  # two spaces
        "a noise-floor comparison",
    ],
)
def test_phrases_that_are_not_non_mechanism(text):
    assert fields(established_fact, _mechanism(LONG_ENOUGH + text)) == []


@pytest.mark.parametrize(
    ("mechanism", "passes"),
    [
        ("  " + "x" * 39 + "  ", False),  # 39 after stripping
        ("  " + "x" * 40 + "  ", True),
        (None, False),
        (42, False),
    ],
)
def test_mechanism_length_counts_stripped_characters(mechanism, passes):
    assert (fields(established_fact, _mechanism(mechanism)) == []) is passes


def test_short_mechanism_is_not_also_phrase_checked():
    assert len(findings(established_fact, _mechanism("within noise"))) == 1


@pytest.mark.parametrize(
    ("condition", "passes"),
    [
        ({"sm_arch": None, "shape_regime": None, "dtype": None, "toolchain": None}, False),
        ({"sm_arch": " ", "dtype": ""}, False),
        ({"toolchain": "ncu 2024.3"}, True),
        ({"dtype": 16}, False),  # not a string
        ("sm_90", False),  # not an object
        ({}, False),
    ],
)
def test_condition_needs_one_non_blank_string(condition, passes):
    record = example("anti-strategy")
    record["payload"]["established_fact"]["condition"] = condition
    assert (fields(established_fact, record) == []) is passes


@pytest.mark.parametrize("verdict", ["unknown", "unstable"])
def test_no_conclusion_verdicts(verdict):
    record = example("anti-strategy")
    record["payload"]["verdict"] = verdict
    assert fields(established_fact, record) == ["payload.verdict"]


@pytest.mark.parametrize("fact", [None, "a string", ["list"]])
def test_fact_must_be_an_object_and_stops_there(fact):
    record = example("anti-strategy")
    record["payload"]["established_fact"] = fact
    assert fields(established_fact, record) == ["payload.established_fact"]


def test_only_anti_strategies_are_checked():
    record = example("strategy")
    record["payload"]["established_fact"] = {"mechanism": "within noise"}
    assert findings(established_fact, record) == []


def test_established_fact_survives_a_payload_list():
    record = example("anti-strategy")
    record["payload"] = ["verdict", "unknown"]
    assert fields(established_fact, record) == ["payload.established_fact"]
