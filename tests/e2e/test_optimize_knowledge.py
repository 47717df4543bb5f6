"""The knowledge base in every run: a brief `git kb query` answer in the agent's prompt and in
the knobs provider's exclusions, the cited ids in the trace, outcomes back as feedback.

The store is real: its strategies are mined from a first real run (write-back), and one
anti-strategy records a knob setting that failed. The fake harness of test_optimize_loop
times a candidate by its COST constant, so every verdict is deterministic.
"""

from __future__ import annotations

import json
import sys

import pytest
from helpers import example_files, kb
from helpers.optimize_runs import make_bundle, run

from gitkb import record as rec
from gitkb.layout import feedback_path
from gitkb.query.feedback import fold
from gitkb.store import Store

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

ONE_CASE = [{"case_id": "small", "parameters": {"scale": 1.0}, "weight": 1.0}]
ANTI_ID = "generic.cpu.any.bundle.anti.set-cost-from-60-0-to-120-0-t01"


def knowledge_base(tmp_path) -> Store:
    """A store holding a first run's mined strategies for this bundle's kernel, and an
    anti-strategy saying that COST 120.0 made it worse."""
    store = Store.init(tmp_path / "kb")
    first = tmp_path / "first"
    first.mkdir()
    bundle = make_bundle(first, cases=ONE_CASE, tunables={"COST": [100.0, 80.0]})
    result, _ = run(first, bundle, provider="knobs", kb=str(store.location))
    assert result.document["write_back"]["success"], result.document["write_back"]
    anti = json.loads(next(p for p in example_files() if ".anti." in p.name).read_bytes())
    anti["id"] = ANTI_ID
    anti["episode_key"] = "generic|any|bundle|set_cost|operator"
    anti["retrieval"]["scope"].update(
        vendor="generic", arch="generic", product="cpu", dsl="any", operator_family="bundle",
        operators=["bundle"], architectures=["generic"],
    )  # fmt: skip
    anti["retrieval"]["generality"].update(arch="generic", language="any")
    anti["payload"]["attempted"] = "set COST from 60.0 to 120.0"
    store.admit(rec.dumps(anti), "insert")
    return store


def test_knobs_skip_what_an_anti_strategy_ruled_out(tmp_path):
    store = knowledge_base(tmp_path)
    bundle = make_bundle(tmp_path, cases=ONE_CASE, tunables={"COST": [100.0, 120.0, 80.0]})
    result, lines = run(tmp_path, bundle, provider="knobs", kb=str(store.location))
    knowledge = result.document["knowledge"]
    assert ANTI_ID in knowledge["records"] and knowledge["asked"][0]["family"] == "bundle"
    changes = [e["mutation_summary"] for e in result.document["experiments"][1:]]
    assert changes == ["set COST from 100.0 to 80.0"]  # 120.0 was never proposed
    first = result.document["experiments"][1]
    assert first["kb_excluded_by"] == [ANTI_ID] and first["kb_cited"] == []
    memory = json.loads((tmp_path / "out" / "trace" / "memory" / "v1.json").read_text())
    assert memory["kb_excluded_by"] == [ANTI_ID]
    assert any("knowledge base: " in line and ANTI_ID in line for line in lines)


def test_agent_prompt_carries_the_answer_and_outcomes_become_feedback(tmp_path):
    store = knowledge_base(tmp_path)
    strategy = next(e["id"] for e in store.view().entries() if e["type"] == "strategy")
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json, os, re, sys\n"
        "prompt = open(os.environ['GITKB_PROMPT_FILE']).read()\n"
        "assert 'What the knowledge base says' in prompt, prompt\n"
        "block = prompt.split('```json\\n', 1)[1].split('\\n```', 1)[0]\n"
        "records = json.loads(block)\n"
        "assert all('worth' not in r for r in records)\n"
        "assert all('snippet' not in r['payload'].get('implementation', {}) for r in records)\n"
        "ids = [r['id'] for r in records if r['type'] == 'strategy']\n"
        "path = sys.argv[1]\n"
        "text = open(path).read()\n"
        "cost = re.search(r'COST = ([0-9.]+)', text).group(1)\n"
        "new = {'100.0': '50.0', '50.0': '55.0'}[cost]\n"
        "open(path, 'w').write(text.replace('COST = ' + cost, 'COST = ' + new))\n"
        "json.dump({'hypothesis': 'less cost', 'change': 'COST ' + cost + ' -> ' + new,\n"
        "           'kb_records': ids[:1]}, open('candidate_metadata.json', 'w'))\n"
    )
    bundle = make_bundle(tmp_path, {"candidates_per_round": 2}, cases=ONE_CASE)
    result, _ = run(
        tmp_path, bundle, provider="command", kb=str(store.location),
        options={"agent_command": f"{sys.executable} {agent} {{candidate}}"},
    )  # fmt: skip
    kept, reverted = result.document["experiments"][1:]
    assert kept["status"] == "promoted" and reverted["status"] == "rejected"
    assert kept["kb_cited"] == [strategy] == reverted["kb_cited"]
    assert kept["kb_feedback"]["outcome"] == "helped"
    assert reverted["kb_feedback"]["outcome"] == "no-effect"
    for version in (1, 2):
        memory = json.loads(
            (tmp_path / "out" / "trace" / "memory" / f"v{version}.json").read_text()
        )
        assert memory["kb_cited"] == [strategy]
    raw = Store.open(store.location).view().read_files([feedback_path(strategy)])
    events = [json.loads(line) for line in raw[feedback_path(strategy)].splitlines()]
    label = result.document["trace"]["label"]
    assert [(e["outcome"], e["trace"]) for e in events] == [("helped", label), ("no-effect", label)]
    assert fold(raw[feedback_path(strategy)]).counts["verified_effective"] == 1


def tlx_reader(root, backend: str, architecture: str) -> list[str]:
    """The TLX agent's documented selection, read off an exported tree: manifests under
    <vendor>/<topic>/ whose backends and architectures are empty or hold the target's
    (lower case, '-' and ' ' as '_'), sorted by (priority, documents); their documents."""

    def norm(name):
        return name.lower().replace("-", "_").replace(" ", "_")

    chosen = []
    for manifest_path in sorted(root.glob("*/*/manifest.json")):
        manifest = json.loads(manifest_path.read_text())
        backends = [norm(b) for b in manifest.get("backends", [])]
        archs = [norm(a) for a in manifest.get("architectures", [])]
        if backends and norm(backend) not in backends:
            continue
        if archs and norm(architecture) not in archs:
            continue
        chosen.append((manifest.get("priority", 0), manifest["documents"], manifest_path.parent))
    chosen.sort(key=lambda c: (c[0], c[1]))
    return [str((folder / doc).relative_to(root)) for _, docs, folder in chosen for doc in docs]


def test_the_store_exports_tlx_knowledge_and_the_run_reads_it_the_same_way(tmp_path):
    store = knowledge_base(tmp_path)
    out = tmp_path / "tlx-knowledge"
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"backend": "cpu", "architecture": "x86_64"}))
    done = kb(
        "export", "tlx-knowledge", str(out), "--target", str(target),
        "--store", str(store.location),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    selected = tlx_reader(out, "cpu", "x86_64")
    assert selected == ["generic/generic/knowledge.md"]
    text = (out / selected[0]).read_text()
    strategy = next(e["id"] for e in store.view().entries() if e["type"] == "strategy")
    assert f"Record `{strategy}`." in text and f"Record `{ANTI_ID}`." in text
    assert "Numbers as the record states them: gain 20.0%" in text
    assert text.index("## What worked, measured by a trace") < text.index("## What not to repeat")
    manifest = json.loads((out / "generic" / "generic" / "manifest.json").read_text())
    assert manifest == {
        "priority": 0, "backends": [], "architectures": [], "documents": ["knowledge.md"]
    }  # fmt: skip
    flat = (out / "optimization_guidance.md").read_text()
    assert flat.startswith("--- knowledge.md (generic/generic) ---\n# generic")
    # the run's agent gets the same documents, headed the same way
    bundle = make_bundle(tmp_path, cases=ONE_CASE, budget={"candidates_per_round": 1})
    agent = tmp_path / "agent.py"
    agent.write_text("import shutil, sys\nshutil.copy(sys.argv[1], sys.argv[2])\n")
    result, _ = run(
        tmp_path, bundle, provider="command", kb=str(store.location),
        options={"agent_command": f"{sys.executable} {agent} {{prompt_file}} prompt.seen"},
    )  # fmt: skip
    assert result.document["knowledge"]["context_documents"] == selected
    prompt = (tmp_path / "out" / "workspaces" / "r001-c000" / "prompt.seen").read_text()
    assert flat.strip() in prompt
