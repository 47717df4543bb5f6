"""`git kb mcp`: the store's verbs as MCP tools, driven over stdio by the SDK's own client."""

from __future__ import annotations

import json
import os
import sys

import pytest
from helpers import ROOT, example_files

from gitkb.store import Store
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'gitkb[mcp]')")
anyio = pytest.importorskip("anyio")

STRATEGY = "nvidia.h100.triton.softmax.online-rescale-two-pass-s01"


async def _session_calls(store_dir, calls, flags=()):
    """Start `git kb mcp` as the SDK's stdio client does, list its tools, make the calls
    (a callable among them runs between two calls, its result in their place)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"PYTHONPATH": str(ROOT), **{k: v for k, v in os.environ.items() if k.startswith("GIT")}}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gitkb", "mcp", "--store", str(store_dir), *flags],
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results = []
        for step in calls:  # a tool call, or something to do between calls
            results.append(step() if callable(step) else await session.call_tool(*step))
    return sorted(t.name for t in tools.tools), results


def call(store_dir, *calls, flags=()):
    return anyio.run(_session_calls, store_dir, list(calls), flags)


def payload(result) -> dict:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def test_mcp_serves_query_resolve_show_and_feedback(tmp_path):
    store = Store.init(tmp_path / "kb")
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))
    names, results = call(
        store.location,
        ("query", {"terms": "online softmax", "arch": "sm_90", "dsl": "triton", "brief": True}),
        ("show", {"record_id": STRATEGY}),
        ("resolve", {"kernel": "softmax", "arch": "H100"}),
        (
            "feedback",
            {
                "record_id": STRATEGY,
                "outcome": "helped",
                "trace": "run-1",
                "trace_commit": "ab" * 20,
            },
        ),
        ("query", {"family": "softmx"}),
        ("feedback", {"record_id": "no.such.record.at.all", "outcome": "helped"}),
        flags=["--allow-write"],
    )
    assert names == ["attest", "feedback", "query", "resolve", "show", "vocabulary"]
    answer, shown, resolved, given, unknown, missing = results
    # the text is what `git kb query --json` prints: compact, the same document
    assert answer.content[0].text == json.dumps(
        answer.structured_content, ensure_ascii=False, separators=(",", ":")
    )
    answer = payload(answer)
    assert answer["query"]["arch"] == "hopper" and answer["result"]["kind"] == "matches"
    hit = next(r for r in answer["records"] if r["id"] == STRATEGY)
    assert "snippet" not in hit["payload"]["implementation"] and "worth" not in json.dumps(hit)
    full = payload(shown)
    assert set(full) == {"id", "type", "applies_to", "payload"}
    assert full["payload"]["implementation"]["snippet"]
    assert payload(resolved)["read_reason"] == "read"
    assert payload(given)["action"] == "feedback" and payload(given)["commit"]
    assert Store.open(store.location).log()[0]["action"] == "feedback"
    assert unknown.is_error and "unknown family 'softmx'" in unknown.content[0].text
    assert missing.is_error and "no record 'no.such.record.at.all'" in missing.content[0].text


def test_one_server_follows_main_as_it_moves(tmp_path):
    """The server keeps its store open across calls, and a record another process admits
    meanwhile is in the next answer."""
    from gitkb import record as rec

    store = Store.init(tmp_path / "kb.git", bare=True)
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))
    incoming = synthetic.strategy(0, families=1)  # n=0: nvidia hopper triton

    def admit() -> None:
        Store.open(store.location).admit(rec.dumps(incoming), "insert")

    question = ("query", {"dsl": "triton", "limit": 100})
    admitted = incoming["id"]
    _, results = call(store.location, question, question, admit, question,
                      ("show", {"record_id": admitted}))  # fmt: skip
    before, again, _, after, shown = [r if r is None else payload(r) for r in results]
    ids = [r["id"] for r in after["records"]]
    assert before["result"]["commit"] == again["result"]["commit"] != after["result"]["commit"]
    assert admitted in ids and admitted not in [r["id"] for r in before["records"]]
    assert after["result"]["store_total"] == before["result"]["store_total"] + 1
    assert shown["id"] == admitted
