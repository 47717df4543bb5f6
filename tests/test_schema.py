"""Tests for gitkb.schema: the clean-1.3 schema, the opt-trace-1.0 profile, the examples."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitkb import schema
from gitkb.schema import profile as profile_mod

REPO = Path(__file__).resolve().parents[1]
SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "gpu-wiki-sample"
EXAMPLES = REPO / "templates" / "examples" / "records"
PROFILE_FILE = REPO / "schema" / "opt-trace-1.0.schema.json"

MIN_PROBLEM = {"target": "an invented accelerator", "statement": "an invented problem"}
COUNTERS = {
    "query_count": 0,
    "served_count": 0,
    "applied_count": 0,
    "verified_effective": 0,
    "verified_ineffective": 0,
    "fallback_served": 0,
}
FACT_MECHANISM = "The tile needs more shared memory than one SM has, so it cannot launch."


def strategy_record() -> dict:
    """A valid strategy record (clean-1.3 and opt-trace-1.0) with every optional block filled."""
    gain_metric = {
        "metric": "latency",
        "direction": "lower-better",
        "delta_pct": 12.5,
        "before": None,
        "after": None,
        "unit": "%",
        "measured_over": "four invented shapes",
        "note": "positive is faster",
        "source": "harness",
    }
    return {
        "schema": "clean-1.3",
        "id": "nvidia.h100.triton.rmsnorm.vector-loads-s01",
        "type": "strategy",
        "level": "operator",
        "status": "active",
        "episode_key": "hopper|triton|rmsnorm|vector_loads|operator",
        "retrieval": {
            "scope": {
                "vendor": "nvidia",
                "arch": "hopper",
                "product": "h100",
                "dsl": "triton",
                "operator_family": "rmsnorm",
                "operators": ["rmsnorm"],
                "shape_signature": {"dtype": "bf16", "hidden": 4096, "contiguous": True},
                "architectures": ["hopper"],
            },
            "generality": {"arch": "hopper", "language": "triton", "workload_family": "norm"},
            "locator": {"kernel_source": None},
            "signals": {
                "bottleneck": "store-bandwidth-bound",
                "metrics": {"bytes_per_row": 8192, "note": "invented", "unknown": None},
                "shape_regime": {
                    "predicate": "hidden >= 1024",
                    "var_axes": ["rows"],
                    "n_shapes": 4,
                },
                "symptoms": ["memory-bound"],
            },
            "technique_tags": ["vector-loads"],
            "triggers": ["an rmsnorm issues narrow loads"],
            "links": {"parent": None, "see_also": [], "depends_on": []},
        },
        "payload": {
            "goal": "Make an invented rmsnorm faster.",
            "problem": {
                **MIN_PROBLEM,
                "operator": "rmsnorm",
                "operator_id": None,
                "dsl": "triton",
                "workload": "rmsnorm over the hidden axis",
                "shape_contract": {"hidden": 4096, "anything": ["goes", "here"]},
                "bottleneck": None,
                "observed_symptom": "low achieved bandwidth",
            },
            "trace": {
                "builds_on": {"approach": "scalar loads", "is_baseline": True},
                "techniques_applied_before": [],
                "technique_here": ["vector-loads"],
                "rediscovered": None,
                "n_operators": 1,
            },
            "change": "Load eight bf16 values per instruction.",
            "mechanism": "Wider loads need fewer memory instructions per byte.",
            "implementation": {
                "format": "unified-diff (verbatim; '-' = before this step, '+' = after)",
                "snippet": "-x = load(p)\n+x = load(p, vec=8)\n",
                "core_kernel_name": "rmsnorm_kernel",
            },
            "cost": {"edit_scope": "one-line", "risk": "low", "risk_basis": "a load width"},
            "next_steps": ["fuse the residual add"],
            "config": {"BLOCK": 1024},
            "applies_when": ["rows are contiguous"],
        },
        "evidence": {
            "summary": {
                "confidence": "measured",
                "bottleneck_evidence": {"basis": "bench-only", "tool": None, "note": "n/a"},
                "mechanism_metrics": {
                    "launch_count": {"before": 1, "after": 1, "unit": "launches"},
                    "occupancy_limiter": None,
                },
                "measured_on": {"gpu": "an invented GPU", "harness": "an invented harness"},
            },
            "raw": {
                "source_repo": "invented-trace",
                "version": "v2",
                "git_commit": "0123456789abcdef0123456789abcdef01234567",
                "hunk_index": 0,
                "file_paths": ["kernel.py"],
                "evidence_extra": {"free": "form"},
                "effect": {"basis": "measured", "delta_pct": 12.5, "comparable": True},
            },
        },
        "worth": {
            "rank": {
                "score": 0.3,
                "tier": "promising",
                "formula": "invented",
                "components": {"prior": 0.3},
                "computed_at": None,
                "builder_version": "1.1",
            },
            "gain": {
                "basis": "measured",
                "kind": "performance",
                "primary": "latency",
                "pct": 12.5,
                "metrics": [gain_metric],
                "regressions": [{**gain_metric, "metric": "compile_time", "delta_pct": -3.0}],
                "correctness": {"gate": "allclose", "observed": "pass", "max_diff": 0.001},
                "comparable": True,
                "note": "relative numbers only",
            },
            "track": {
                "counters": {**COUNTERS, "first_seen_ts": None, "last_used_ts": None},
                "prior": {"corpus_kept_ratio": 0.5, "n_independent_runs": 2, "technique": "x"},
                "confirm_keys": [],
            },
        },
    }


# Exactly the required keys of each type's payload (docs/record-format.md §1.5), nothing optional.
MINIMAL_PAYLOADS = {
    "strategy": {
        "goal": "g",
        "problem": MIN_PROBLEM,
        "trace": {"builds_on": {"approach": "a"}},
        "change": "c",
        "mechanism": "",
        "implementation": {"format": "none"},
        "cost": {"edit_scope": "one-line", "risk": "low"},
        "next_steps": [],
    },
    "anti-strategy": {
        "goal": "g",
        "problem": MIN_PROBLEM,
        "attempted": "a",
        "verdict": "api-limitation",
        "lesson": "l",
    },
    "technique-card": {
        "goal": "g",
        "problem": MIN_PROBLEM,
        "technique": "",
        "what": "",
        "when": "",
        "caveats": [],
    },
    "symptom-card": {"goal": "g", "problem": MIN_PROBLEM, "candidate_techniques": []},
    "reference-kernel": {
        "goal": "g",
        "problem": MIN_PROBLEM,
        "trace": {"builds_on": {"approach": "a"}},
        "implementation": {"format": "source (verbatim)", "snippet": "def k(): pass"},
    },
    "doc": {"goal": "g", "problem": MIN_PROBLEM, "title": "", "summary": "", "sections": []},
    "numerics-rule": {"goal": "g", "problem": MIN_PROBLEM, "rule": "r", "rationale": ""},
    "dispatch-rule": {"goal": "g", "problem": MIN_PROBLEM, "rule": "r", "rationale": ""},
}

# Optional nested closed objects, added so the closure tests can reach them.
RICH_EXTRAS = {
    "anti-strategy": {
        "established_fact": {
            "condition": {"sm_arch": "sm_90", "shape_regime": None},
            "mechanism": FACT_MECHANISM,
        },
        "trace": {"builds_on": {"approach": "a"}},
    },
    "technique-card": {
        "measured_wins": [{"operator": "o", "dsl": "triton", "gain_pct": None, "change": "c"}]
    },
    "symptom-card": {
        "candidate_techniques": [{"technique": "t", "success_rate_pct": None}],
        "measured_on_operators": [{"operator": "o", "measured_as": "m"}],
    },
    "doc": {"sections": [{"heading": "h", "anchor": "a", "gist": "g"}]},
}


def record_of(type_: str, payload: dict | None = None) -> dict:
    """The strategy record turned into ``type_``; default payload: minimal plus rich extras."""
    if type_ == "strategy" and payload is None:
        return strategy_record()
    record = strategy_record()
    record["type"] = type_
    if payload is None:
        payload = {**MINIMAL_PAYLOADS[type_], **RICH_EXTRAS.get(type_, {})}
    record["payload"] = copy.deepcopy(payload)
    return record


def at(document, path):
    for part in path:
        document = document[part]
    return document


def put(document, path, value):
    at(document, path[:-1])[path[-1]] = value


def has_error(found, path: str) -> bool:
    return any(where == path for where, _ in found)


# --- conformance sample and valid records -------------------------------------------------


@pytest.mark.slow
def test_conformance_sample_validates():
    records_dir = SAMPLE / "records"
    if not records_dir.is_dir():
        pytest.skip("conformance sample not present")
    files = sorted(p for p in records_dir.rglob("*.json") if p.name != "index.json")
    assert files
    failures = {}
    for path in files:
        found = schema.errors(json.loads(path.read_text(encoding="utf-8")))
        if found:
            failures[str(path.relative_to(records_dir))] = found[:3]
    assert failures == {}


@pytest.mark.parametrize("type_", sorted(MINIMAL_PAYLOADS))
def test_minimal_and_rich_payloads_validate(type_):
    assert schema.errors(record_of(type_, MINIMAL_PAYLOADS[type_])) == []
    assert schema.errors(record_of(type_)) == []


def test_full_strategy_record_passes_base_and_profile():
    assert schema.errors(strategy_record()) == []
    assert schema.errors(strategy_record(), schema.PROFILE) == []


# --- enums ----------------------------------------------------------------------------------

ENUM_CASES = [
    ("strategy", ("type",)),
    ("strategy", ("level",)),
    ("strategy", ("status",)),
    ("strategy", ("retrieval", "scope", "vendor")),
    ("strategy", ("retrieval", "scope", "arch")),
    ("strategy", ("retrieval", "scope", "dsl")),
    ("strategy", ("retrieval", "generality", "arch")),
    ("strategy", ("retrieval", "generality", "language")),
    ("strategy", ("retrieval", "generality", "workload_family")),
    ("strategy", ("retrieval", "signals", "bottleneck")),
    ("strategy", ("payload", "implementation", "format")),
    ("strategy", ("payload", "cost", "edit_scope")),
    ("strategy", ("payload", "cost", "risk")),
    ("anti-strategy", ("payload", "verdict")),
    ("strategy", ("evidence", "summary", "confidence")),
    ("strategy", ("evidence", "summary", "bottleneck_evidence", "basis")),
    ("strategy", ("evidence", "summary", "mechanism_metrics", "occupancy_limiter")),
    ("strategy", ("evidence", "raw", "effect", "basis")),
    ("strategy", ("worth", "rank", "tier")),
    ("strategy", ("worth", "gain", "basis")),
    ("strategy", ("worth", "gain", "kind")),
    ("strategy", ("worth", "gain", "primary")),
    ("strategy", ("worth", "gain", "metrics", 0, "metric")),
    ("strategy", ("worth", "gain", "metrics", 0, "direction")),
    ("strategy", ("worth", "gain", "metrics", 0, "source")),
    ("strategy", ("worth", "gain", "regressions", 0, "source")),
]


def _dotted(path) -> str:
    """The errors() spelling of a path: dots between keys, [i] for list items."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


@pytest.mark.parametrize(("type_", "path"), ENUM_CASES, ids=lambda v: str(v))
def test_enum_rejects_unknown_value(type_, path):
    record = record_of(type_)
    put(record, path, "not-a-listed-value")
    assert has_error(schema.errors(record), _dotted(path))


@pytest.mark.slow
def test_enum_cases_reach_every_enum_in_the_schema():
    from jsonschema import Draft202012Validator

    base = schema.load(schema.BASE)
    enum_sites: set[int] = set()

    def collect(node):
        if isinstance(node, dict):
            if "enum" in node:
                enum_sites.add(id(node))
            for key, child in node.items():
                if key != "if":  # an enum that only selects a type branch never reports
                    collect(child)
        elif isinstance(node, list):
            for child in node:
                collect(child)

    collect(base)
    validator = Draft202012Validator(base)
    reached = set()
    for type_, path in ENUM_CASES:
        record = record_of(type_)
        put(record, path, "not-a-listed-value")
        reached |= {id(e.schema) for e in validator.iter_errors(record) if e.validator == "enum"}
    assert reached == enum_sites


def test_schema_const_is_pinned():
    record = strategy_record()
    record["schema"] = "clean-1.2"
    assert has_error(schema.errors(record), "schema")


# --- required payload fields per type -----------------------------------------------------

REQUIRED_CASES = [(t, key) for t, payload in MINIMAL_PAYLOADS.items() for key in payload]


@pytest.mark.slow
@pytest.mark.parametrize(("type_", "key"), REQUIRED_CASES, ids=lambda v: str(v))
def test_payload_required_key_missing_is_rejected(type_, key):
    payload = copy.deepcopy(MINIMAL_PAYLOADS[type_])
    del payload[key]
    found = schema.errors(record_of(type_, payload))
    assert any(where == "payload" and repr(key) in message for where, message in found)


# --- closed and open objects --------------------------------------------------------------

CLOSED_CASES = [
    ("strategy", ()),
    ("strategy", ("retrieval",)),
    ("strategy", ("retrieval", "scope")),
    ("strategy", ("retrieval", "generality")),
    ("strategy", ("retrieval", "locator")),
    ("strategy", ("retrieval", "signals")),
    ("strategy", ("retrieval", "signals", "shape_regime")),
    ("strategy", ("retrieval", "links")),
    ("strategy", ("payload", "problem")),
    ("strategy", ("payload", "trace")),
    ("strategy", ("payload", "trace", "builds_on")),
    ("strategy", ("payload", "implementation")),
    ("strategy", ("payload", "cost")),
    ("strategy", ("evidence",)),
    ("strategy", ("evidence", "summary")),
    ("strategy", ("evidence", "summary", "mechanism_metrics")),
    ("strategy", ("evidence", "summary", "mechanism_metrics", "launch_count")),
    ("strategy", ("worth",)),
    ("strategy", ("worth", "rank")),
    ("strategy", ("worth", "gain")),
    ("strategy", ("worth", "gain", "metrics", 0)),
    ("strategy", ("worth", "gain", "regressions", 0)),
    ("strategy", ("worth", "gain", "correctness")),
    ("strategy", ("worth", "track")),
    ("strategy", ("worth", "track", "counters")),
    ("strategy", ("worth", "track", "prior")),
    *[(type_, ("payload",)) for type_ in MINIMAL_PAYLOADS],
    ("anti-strategy", ("payload", "established_fact")),
    ("anti-strategy", ("payload", "established_fact", "condition")),
    ("technique-card", ("payload", "measured_wins", 0)),
    ("symptom-card", ("payload", "candidate_techniques", 0)),
    ("symptom-card", ("payload", "measured_on_operators", 0)),
    ("doc", ("payload", "sections", 0)),
]


@pytest.mark.slow
@pytest.mark.parametrize(("type_", "path"), CLOSED_CASES, ids=lambda v: str(v))
def test_closed_object_rejects_unknown_key(type_, path):
    record = record_of(type_)
    at(record, path)["x_unknown_key"] = "value"
    expected = _dotted(path) if path else "(root)"
    found = schema.errors(record)
    assert any(where == expected and "x_unknown_key" in message for where, message in found)


OPEN_PATHS = [
    ("evidence", "raw"),
    ("evidence", "raw", "effect"),
    ("evidence", "raw", "evidence_extra"),
    ("evidence", "summary", "bottleneck_evidence"),
    ("payload", "problem", "shape_contract"),
    ("payload", "config"),
]


@pytest.mark.parametrize("path", OPEN_PATHS, ids=lambda v: ".".join(v))
def test_open_object_accepts_unknown_key(path):
    record = strategy_record()
    at(record, path)["x_unknown_key"] = "value"
    assert schema.errors(record) == []


# --- individual type rules ----------------------------------------------------------------

TYPE_CASES = [
    (("retrieval", "signals", "metrics", "m"), True, False),
    (("retrieval", "signals", "metrics", "m"), [1], False),
    (("retrieval", "signals", "metrics", "m"), {"a": 1}, False),
    (("retrieval", "signals", "metrics", "m"), None, True),
    (("retrieval", "signals", "metrics", "m"), "text", True),
    (("retrieval", "scope", "shape_signature", "k"), None, False),
    (("retrieval", "scope", "shape_signature", "k"), False, True),
    (("retrieval", "signals", "bottleneck"), None, True),
    (("worth", "rank", "score"), 1.5, False),
    (("worth", "rank", "score"), -0.01, False),
    (("worth", "rank", "score"), 1, True),
    (("worth", "rank", "score"), 0, True),
    (("worth", "track", "counters", "query_count"), 3.0, True),
    (("worth", "track", "counters", "query_count"), 3.5, False),
    (("worth", "track", "counters", "query_count"), -1, False),
    (("worth", "track", "prior", "corpus_ladder_ratio"), 1.2, False),
    (("worth", "track", "prior", "corpus_ladder_ratio"), None, True),
    (("worth", "gain", "pct"), True, False),
    (("evidence", "summary", "measured_on", "gpu"), 80, False),
    (("id",), "Nvidia.H100.x.y.z", False),
    (("episode_key",), "", False),
    (("payload", "change"), "", False),
]


@pytest.mark.parametrize(("path", "value", "valid"), TYPE_CASES, ids=lambda v: repr(v))
def test_type_rule(path, value, valid):
    record = strategy_record()
    put(record, path, value)
    assert (schema.errors(record) == []) is valid


@pytest.mark.parametrize(("length", "valid"), [(39, False), (40, True)])
def test_established_fact_mechanism_min_length(length, valid):
    record = record_of("anti-strategy")
    record["payload"]["established_fact"]["mechanism"] = "m" * length
    assert (schema.errors(record) == []) is valid


# --- the errors() API ---------------------------------------------------------------------


def test_errors_are_sorted_limited_and_pathed():
    record = strategy_record()
    del record["status"]
    record["worth"]["gain"]["metrics"][0]["unit"] = 5
    record["level"] = "nowhere"
    found = schema.errors(record)
    assert found == sorted(found)
    assert [where for where, _ in found] == ["(root)", "level", "worth.gain.metrics[0].unit"]
    assert schema.errors(record, limit=2) == found[:2]


def test_import_does_not_load_jsonschema():
    code = "import sys, gitkb.schema; sys.exit('jsonschema' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


# --- the opt-trace-1.0 profile ------------------------------------------------------------


def test_committed_profile_is_current():
    assert json.loads(PROFILE_FILE.read_text(encoding="utf-8")) == profile_mod.build_profile()
    assert profile_mod.profile_differences() == []


def test_profile_metadata():
    profile = profile_mod.build_profile()
    assert profile["$id"] == "opt-trace-1.0.schema.json"
    assert profile["properties"]["schema"]["const"] == "clean-1.3"
    assert profile["x-profile-of"] == {
        "base": "clean-1.3",
        "base_file": "clean-1.3.schema.json",
        "n_patches": 7,
        "generated_by": "gitkb schema --write",
    }
    assert schema.load(schema.BASE)["$id"] == "clean-1.3.schema.json"  # base left untouched


def _widened(index: int, **changes) -> tuple:
    patches = list(profile_mod.PATCHES)
    patches[index] = dataclasses.replace(patches[index], **changes)
    return tuple(patches)


WIDENING = {
    "enum gains a value": _widened(0, value=("operator", "cross-operator", "galaxy")),
    "type enum gains a value": _widened(1, value=("strategy", "doc", "notes")),
    "restrict adds a property": _widened(3, value=(*profile_mod.PATCHES[3].value, "invented")),
    "require drops a key": _widened(5, value=("kind",)),
    "anti payload stops requiring lesson": _widened(
        6, value=("goal", "problem", "attempted", "verdict", "established_fact")
    ),
    "require names an unknown key": _widened(4, value=("confidence", "measured_on", "nope")),
    "set on a non-list": _widened(0, target="properties.schema.const", value=("clean-9",)),
    "missing target": _widened(2, target="properties.evidence.properties.nowhere"),
    "unknown operation": _widened(2, operation="loosen"),
}


@pytest.mark.parametrize("patches", WIDENING.values(), ids=list(WIDENING))
def test_widening_patch_is_refused(patches):
    with pytest.raises(schema.SchemaError):
        profile_mod.build_profile(patches)


def _anti_without_fact(record):
    record.update(record_of("anti-strategy"))
    del record["payload"]["established_fact"]


PROFILE_REJECTIONS = {
    "level generic": (lambda r: r.update(level="generic"), "level"),
    "type doc": (lambda r: r.update(type="doc", payload=MINIMAL_PAYLOADS["doc"]), "type"),
    "raw without git_commit": (lambda r: r["evidence"]["raw"].pop("git_commit"), "evidence.raw"),
    "raw with page_path": (
        lambda r: r["evidence"]["raw"].update(page_path="some/page"),
        "evidence.raw",
    ),
    "summary without measured_on": (
        lambda r: r["evidence"]["summary"].pop("measured_on"),
        "evidence.summary",
    ),
    "gain without kind": (lambda r: r["worth"]["gain"].pop("kind"), "worth.gain"),
    "anti-strategy without established_fact": (_anti_without_fact, "payload"),
}


@pytest.mark.parametrize(
    ("mutate", "path"), PROFILE_REJECTIONS.values(), ids=list(PROFILE_REJECTIONS)
)
def test_profile_rejects_what_base_allows(mutate, path):
    record = strategy_record()
    mutate(record)
    assert schema.errors(record) == []
    assert has_error(schema.errors(record, schema.PROFILE), path)


def test_profile_differences_reports_stale_and_missing(tmp_path, monkeypatch):
    stale = json.loads(PROFILE_FILE.read_text(encoding="utf-8"))
    stale["properties"]["level"]["enum"].append("generic")
    del stale["x-profile-of"]
    stale_file = tmp_path / "stale.schema.json"
    stale_file.write_text(json.dumps(stale), encoding="utf-8")
    lines = profile_mod.profile_differences(stale_file)
    assert any(line.startswith("properties.level.enum:") for line in lines)
    assert any(line.startswith("x-profile-of:") for line in lines)

    empty_dir = tmp_path / "schema"
    empty_dir.mkdir()
    monkeypatch.setattr(schema, "data_dir", lambda kind: empty_dir)
    assert len(profile_mod.profile_differences()) == 1
    assert "missing" in profile_mod.profile_differences()[0]


def test_write_profile_is_atomic_and_current(tmp_path):
    shutil.copy(PROFILE_FILE, tmp_path / "old.json")
    target = tmp_path / "opt-trace-1.0.schema.json"
    target.write_text("{}", encoding="utf-8")
    assert profile_mod.write_profile(target) == target
    text = target.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert json.loads(text) == profile_mod.build_profile()
    assert profile_mod.profile_differences(target) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json", target.name]


def test_describe_patches():
    lines = profile_mod.describe_patches()
    assert len(lines) == len(profile_mod.PATCHES) == 7
    assert lines[0].startswith('#0 set properties.level.enum = ["operator", "cross-operator"]: ')
    assert [p.index for p in profile_mod.PATCHES] == list(range(7))


# --- shipped example records --------------------------------------------------------------

EXAMPLE_FILES = sorted(EXAMPLES.rglob("*.json"))
CODE_KEYS = {"snippet", "dispatch_snippet", "attempted_code"}
LEAKS = {
    "absolute path": re.compile(r"/(?:root|home|Users)/[\w.-]+"),
    "email": re.compile(r"(?<![\w.@])[\w.+-]{2,}@[\w-]+\.[a-z]{2,}\b"),
    "markdown page": re.compile(r"\b\w[\w/-]*\.md\b"),
    "repository path": re.compile(r"(?:docs|records)/[\w./-]+"),
}
ABSOLUTE_LATENCY = re.compile(r"[\d.]+\s*(?:us|µs|μs|ms)\b", re.IGNORECASE)
TIME_UNITS = {"us", "µs", "μs", "ms", "s", "sec", "ns", "cycle", "cycles"}


def _served_text(node, key=None) -> list[str]:
    """String leaves; code contributes only its comment lines."""
    if isinstance(node, dict):
        return [
            s for k, v in node.items() for s in _served_text(v, k if key not in CODE_KEYS else key)
        ]
    if isinstance(node, list):
        return [s for v in node for s in _served_text(v, key)]
    if not isinstance(node, str):
        return []
    if key in CODE_KEYS:
        return [line.strip() for line in node.splitlines() if line.strip().startswith("#")]
    return [node]


def test_examples_cover_four_types():
    types = sorted(json.loads(p.read_text(encoding="utf-8"))["type"] for p in EXAMPLE_FILES)
    assert types == ["anti-strategy", "reference-kernel", "strategy", "technique-card"]


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_record(path):
    text = path.read_text(encoding="utf-8")
    record = json.loads(text)
    assert text == json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    assert schema.errors(record) == []
    # Hand-written examples claim no trace: the trace gates must not take them for mined records.
    assert not {"source_repo", "git_commit", "version"} & record["evidence"]["raw"].keys()

    scope = record["retrieval"]["scope"]
    layout = (
        record["type"],
        scope["vendor"],
        scope["arch"],
        scope["dsl"],
        scope["operator_family"],
    )
    assert path.relative_to(EXAMPLES).parts == (*layout, f"{record['id']}.json")
    assert len(record["id"].split(".")) >= 5
    assert "links" not in record["retrieval"] and "locator" not in record["retrieval"]

    served = {
        "payload": record["payload"],
        "retrieval": record["retrieval"],
        "summary": record["evidence"]["summary"],
        "gain": record["worth"]["gain"],
    }
    for text_piece in _served_text(served):
        for name, pattern in LEAKS.items():
            assert not pattern.search(text_piece), (name, text_piece)

    gain = record["worth"]["gain"]
    for value in gain.values():
        assert not (isinstance(value, str) and ABSOLUTE_LATENCY.search(value))
    headline = [
        m["delta_pct"] for m in gain.get("metrics", []) if m["metric"] == gain.get("primary")
    ]
    assert gain.get("pct") in (headline or [None])
    for metric in gain.get("metrics", []) + gain.get("regressions", []):
        assert metric["source"] and metric.get("unit", "").strip().lower() not in TIME_UNITS
        if metric["metric"] == "latency":
            assert metric.get("before") is None and metric.get("after") is None
        for field in ("note", "measured_over"):
            assert not ABSOLUTE_LATENCY.search(metric.get(field, ""))

    rank = record["worth"]["rank"]
    assert {"score", "tier"} <= rank.keys()
    track = record["worth"]["track"]
    assert track["prior"] == {}
    assert all(v == 0 for k, v in track["counters"].items() if not k.endswith("_ts"))

    commit = record["evidence"]["raw"].get("git_commit")
    if commit:
        assert json.dumps(record).count(commit) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", [schema.BASE, schema.PROFILE])
def test_shipped_schemas_are_valid_draft_2020_12(name):
    """The validator trusts the shipped schemas at run time; this is where they are checked."""
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema.load(name))


def _mutations(record: dict, rng):
    """Small random edits of a valid record: drop, retype or add a key somewhere."""
    import copy

    values = [None, True, 0, 3.0, -1, 1.5, "", "x" * 45, [], {}, ["a"], {"k": 1}, "generic"]
    for _ in range(40):
        doc = copy.deepcopy(record)
        node, path = doc, []
        while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            if not isinstance(node[key], (dict, list)):
                break
            node, path = node[key], [*path, key]
        if isinstance(node, dict) and node:
            action, key = rng.randrange(3), rng.choice(list(node))
            if action == 0:
                del node[key]
            elif action == 1:
                node[key] = rng.choice(values)
            else:
                node["unexpected_key"] = rng.choice(values)
        elif isinstance(node, list) and node:
            node[rng.randrange(len(node))] = rng.choice(values)
        yield doc


@pytest.mark.slow
@pytest.mark.parametrize("name", [schema.BASE, schema.PROFILE])
def test_fast_check_agrees_with_jsonschema(name):
    """The compiled check and jsonschema give the same verdict on thousands of near-valid
    documents, so errors() may trust the fast yes."""
    import random

    from jsonschema import Draft202012Validator

    from gitkb.schema.check import compile_schema

    fast = compile_schema(schema.load(name))
    slow = Draft202012Validator(schema.load(name))
    seeds = [json.loads(p.read_text(encoding="utf-8")) for p in EXAMPLE_FILES]
    if SAMPLE.is_dir():
        seeds += [json.loads(p.read_bytes()) for p in sorted(SAMPLE.rglob("*.json"))[:60]
                  if p.name != "index.json"]  # fmt: skip
    rng = random.Random(1729)
    checked = disagreements = 0
    for seed in seeds:
        for doc in [seed, *_mutations(seed, rng)]:
            checked += 1
            disagreements += fast(doc) != slow.is_valid(doc)
    assert checked > 150 and disagreements == 0


def test_every_shipped_schema_compiles_to_a_fast_check():
    """A keyword the fast check lacks would silently cost the fast path; keep them covered."""
    from gitkb.schema.check import compile_schema
    from gitkb.util.resources import data_dir

    paths = sorted(data_dir("schema").rglob("*.schema.json"))
    assert len(paths) >= 5
    for path in paths:
        compile_schema(json.loads(path.read_text(encoding="utf-8")))


def test_an_unknown_keyword_falls_back_to_jsonschema():
    from gitkb.schema.check import compile_or_none

    assert compile_or_none({"type": "array", "uniqueItems": True}) is None
