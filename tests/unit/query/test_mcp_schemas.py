"""`git kb mcp` beyond query, driven over stdio by the official SDK's client: resolve, show,
vocabulary and the record resources (read-only, each answer checked against its tool's
output schema), the write guard (feedback and attest only with --allow-write, through the
CLI's own library path, signed as git is set to sign and held to the store's access rules),
hostile arguments, and `--print-config`'s blocks starting a server."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import ROOT, example_files, git, kb, write_git_kb
from helpers.signing import make_key, needs_ssh_keygen, public, sign_with, verify_commit

from gitkb.store import Store, access

pytestmark = pytest.mark.slow  # every test here starts servers: seconds (pyproject: markers)

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'gitkb[mcp]')")
anyio = pytest.importorskip("anyio")
jsonschema = pytest.importorskip("jsonschema")

STRATEGY = "nvidia.h100.triton.softmax.online-rescale-two-pass-s01"
READ_TOOLS = ["query", "resolve", "show", "vocabulary"]
LONG = "q" * 2000  # a hostile value as long as a text argument may be


@pytest.fixture
def examples(tmp_path) -> Store:
    store = Store.init(tmp_path / "kb.git", bare=True)
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))
    return store


def _env(extra_path: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k.startswith("GIT") or k in ("HOME", "PATH")}
    env["PYTHONPATH"] = str(ROOT)
    if extra_path:
        env["PATH"] = f"{extra_path}{os.pathsep}{env.get('PATH', '')}"
    return env


async def _session(command: str, args: list[str], env: dict, steps: list) -> tuple[dict, list]:
    """Start the server as an agent's client does; list its tools and resource templates,
    then run each step (a coroutine function of the session) in turn."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        templates = (await session.list_resource_templates()).resource_templates
        seen = {"tools": tools, "templates": [t.uri_template for t in templates]}
        results = [await step(session) for step in steps]
    return seen, results


def serve(store: Store, *steps, flags: tuple[str, ...] = ()) -> tuple[dict, list]:
    args = ["-m", "gitkb", "mcp", "--store", str(store.location), *flags]
    return anyio.run(_session, sys.executable, args, _env(), list(steps))


def tool(name: str, arguments: dict):
    async def step(session):
        return await session.call_tool(name, arguments)

    return step


def resource(uri: str):
    async def step(session):
        try:
            return await session.read_resource(uri)
        except mcp.MCPError as exc:  # a resource that cannot be read is a protocol error
            return exc

    return step


def named(name: str, arguments: dict):
    """A tool call whose answer ``answer`` checks: (the tool's name, its result)."""

    async def step(session):
        return name, await session.call_tool(name, arguments)

    return step


def answer(called: tuple, tools: dict) -> dict:
    """The structured answer, checked against the tool's own output schema here too, and
    the text beside it the same document."""
    name, result = called
    assert not result.is_error, result.content[0].text
    jsonschema.validate(result.structured_content, tools[name].output_schema)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error_text(result) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


def test_read_only_tools_resources_and_schemas(examples):
    store = examples
    tip = store.tip
    seen, results = serve(
        store,
        named("resolve", {"kernel": "softmax", "arch": "H100"}),
        named("resolve", {"kernel": "softmax", "arch": "H100", "max_bytes": 3000}),
        named("show", {"record_id": STRATEGY}),
        named("vocabulary", {"name": "family"}),
        named("vocabulary", {"name": "dsl", "like": "tri"}),
        named("query", {"family": "softmax", "coverage": True}),
        resource(f"gitkb://record/{STRATEGY}"),
    )
    tools = seen["tools"]
    assert sorted(tools) == READ_TOOLS
    for t in tools.values():
        assert t.output_schema and t.output_schema["type"] == "object", t.name
        assert t.annotations.read_only_hint is True and t.annotations.destructive_hint is False
    assert seen["templates"] == ["gitkb://record/{record_id}"]
    full, tight, shown, families, dsls, coverage, read = results

    resolved = answer(full, tools)
    assert resolved["read_reason"] == "read" and resolved["ranks"]
    first = resolved["ranks"][0]
    assert first["code"]["kind"] in ("diff", "source") and first["code"]["text"].strip()
    assert first["reference"].startswith(f"# Rank 1: {first['id']}")
    assert resolved["budget"] == {"max_bytes": 60000, "omitted": []}
    assert resolved["out"] is None  # nothing written anywhere

    trimmed = answer(tight, tools)
    assert len(tight[1].content[0].text.encode()) <= 3000
    assert trimmed["budget"]["omitted"], "a 3000-byte budget must leave some text out"
    for gone in trimmed["budget"]["omitted"]:
        holder = next(r for r in trimmed["ranks"] if r["id"] == gone["id"])
        assert holder[gone["field"]] is None

    record = answer(shown, tools)
    assert record["id"] == STRATEGY and set(record) == {"id", "type", "applies_to", "payload"}
    assert json.loads(read.contents[0].text) == record
    assert read.contents[0].mime_type == "application/json"

    listed = kb("query", "--list-family", "--store", str(store.location)).stdout.decode().split()
    assert answer(families, tools)["values"] == listed and "softmax" in listed
    assert answer(dsls, tools)["values"] == ["triton"]
    assert answer(coverage, tools)["scoped_pool"] >= 1
    assert Store.open(store.location).tip == tip


def test_hostile_arguments_get_tool_errors_and_write_nothing(examples, tmp_path):
    store = examples
    before = git("--git-dir", str(store.location), "rev-list", "--all").stdout
    outside = tmp_path / "triton_softmax.py"  # a real file outside the store
    outside.write_text("def top_secret_body(): pass\n")
    _, results = serve(
        store,
        tool("feedback", {"record_id": STRATEGY, "outcome": "helped"}),
        tool("attest", {"record_id": STRATEGY, "outcome": "validated"}),
        tool("resolve", {"kernel": str(outside), "arch": "H100"}),
        tool("resolve", {"kernel": "../../etc/passwd", "arch": "H100"}),
        tool("show", {"record_id": "../../../etc/passwd"}),
        tool("show", {"record_id": "records/nvidia/hopper/triton/softmax.json"}),
        tool("show", {"record_id": "no.such.record.at.all"}),
        tool("show", {"record_id": 12345}),
        tool("show", {}),
        tool("query", {"terms": "x" * 3_000_000}),
        tool("query", {"limit": "eight"}),
        tool("query", {"limit": 10**9}),
        tool("query", {"max_bytes": 10}),
        tool("query", {"family": "softmx"}),
        tool("resolve", {"kernel": "softmax", "arch": "H100", "top_n": 0}),
        tool("resolve", {"kernel": "softmax", "arch": "H100", "min_speedup": "fast"}),
        tool("resolve", {"kernel": "softmax", "arch": "no-such-gpu"}),
        tool("vocabulary", {"name": "secrets"}),
        tool("no_such_tool", {}),
        # the longest values the bounds let through: an error names them, never echoes them
        tool("query", {"technique": LONG}),
        tool("query", {"dsl": LONG}),
        tool("query", {"arch": LONG}),
        tool("resolve", {"kernel": "softmax", "arch": LONG}),
        tool("resolve", {"kernel": "softmax", "product": LONG}),
        tool("resolve", {"kernel": "softmax", "arch": "H100", "dsl": LONG}),
        tool("resolve", {"kernel": "/" + LONG[:199], "arch": "H100"}),
        tool("show", {"record_id": LONG[:200]}),
        tool("show", {"record_id": LONG[:201]}),
        tool("vocabulary", {"name": LONG}),
        resource("gitkb://record/..%2F..%2Fetc%2Fpasswd"),
        resource("gitkb://record/no.such.record"),
        resource("gitkb://record/" + LONG),
        resource("gitkb://record/" + LONG[:200]),
        tool("show", {"record_id": STRATEGY}),  # and the server still answers
    )
    *hostile, unreadable, unknown_resource, huge_resource, long_resource, still = results
    texts = [error_text(r) for r in hostile]
    assert "Unknown tool: feedback" in texts[0] and "Unknown tool: attest" in texts[1]
    assert "is a path" in texts[2] and "is a path" in texts[3]
    assert "is not a record id" in texts[4] and "is not a record id" in texts[5]
    assert "no record 'no.such.record.at.all'" in texts[6]
    assert "valid string" in texts[7] and "required" in texts[8].lower()
    assert "at most 2000 characters" in texts[9]
    assert "valid integer" in texts[10] and "less than or equal to 100" in texts[11]
    assert "greater than or equal to 256" in texts[12]
    assert "unknown family 'softmx'" in texts[13]
    assert "greater than or equal to 1" in texts[14] and "valid number" in texts[15]
    assert "unknown arch" in texts[16] and "'vendor'" in texts[17]
    assert "Unknown tool: no_such_tool" in texts[18]
    cut = f"{LONG[:80]!r}... (2,000 characters)"
    for text, said in zip(texts[19:25], ("unknown technique", "unknown dsl", "unknown arch",
                                         "unknown arch", "unknown hardware token",
                                         "unknown --dsl"), strict=True):  # fmt: skip
        assert f"{said} {cut}" in text, text
    assert "is a path" in texts[25] and "(200 characters)" in texts[25]
    assert f"no record {LONG[:80]!r}... (200 characters)" in texts[26]
    assert "at most 200 characters" in texts[27] and "'vendor'" in texts[28]
    assert isinstance(unreadable, mcp.MCPError) and isinstance(unknown_resource, mcp.MCPError)
    assert "no record 'no.such.record'" in str(unknown_resource)
    assert "(2,000 characters) is not a record id (at most 200" in str(huge_resource)
    assert f"no record {LONG[:80]!r}... (200 characters)" in str(long_resource)
    for text in [*texts, str(huge_resource), str(long_resource)]:
        assert LONG[:81] not in text, text
    assert not still.is_error and still.structured_content["id"] == STRATEGY
    for text in texts:
        assert "top_secret_body" not in text and "Traceback" not in text
    assert git("--git-dir", str(store.location), "rev-list", "--all").stdout == before


def test_writes_only_with_allow_write_through_the_cli_writer(examples):
    store = examples
    seen, results = serve(
        store,
        named("feedback", {"record_id": STRATEGY, "outcome": "helped", "trace": "run-1",
                           "trace_commit": "ab" * 20}),
        named("attest", {"record_id": STRATEGY, "outcome": "validated",
                         "evidence": {"speedup": "1.12", "gpu": "H100"}}),
        tool("attest", {"record_id": STRATEGY, "outcome": "bogus"}),
        tool("attest", {"record_id": STRATEGY, "outcome": "failed",
                        "evidence": {"bad key": "x"}}),
        tool("attest", {"record_id": STRATEGY, "outcome": "failed",
                        "evidence": {f"k{n}": "v" for n in range(40)}}),
        tool("attest", {"record_id": "../ledger/x", "outcome": "failed"}),
        tool("feedback", {"record_id": STRATEGY, "outcome": "helped", "trace": "../x",
                          "trace_commit": "ab" * 20}),
        tool("feedback", {"record_id": "no.such.record.at.all", "outcome": "helped"}),
        flags=("--allow-write",),
    )  # fmt: skip
    tools = seen["tools"]
    assert sorted(tools) == sorted([*READ_TOOLS, "attest", "feedback"])
    assert tools["attest"].annotations.read_only_hint is False
    given, attested, *refused = results
    assert answer(given, tools)["action"] == "feedback" and given[1].structured_content["commit"]
    report = answer(attested, tools)
    assert report["counts"]["validations"] == 1 and report["ledger"].startswith("ledger/")
    for result in refused:
        error_text(result)
    assert [e["action"] for e in Store.open(store.location).log()[:2]] == ["attest", "feedback"]
    # the CLI verb prints the same document from the same library call
    cli = json.loads(kb("attest", STRATEGY, "--outcome", "failed", "--store",
                        str(store.location)).stdout)  # fmt: skip
    assert set(cli) == set(report) and cli["counts"]["recalls"] == 2
    # the MCP commit is an admission like the CLI's: the same subject and trailer block
    messages = git("--git-dir", str(store.location), "log", "-3", "--format=%B%x00").stdout
    mcp_attest = messages.split("\x00")[1]
    assert mcp_attest.strip().startswith(f"kb attest {STRATEGY}")
    assert "KB-Action: attest" in mcp_attest and "KB-Outcome: validated" in mcp_attest


@pytest.fixture
def signed(examples, tmp_path) -> tuple[Store, Path]:
    """The example store with access on (alice its admin, signatures required) and git set
    to sign as alice; returns the store and the store's own allowed-signers file."""
    key = make_key(tmp_path / "keys", "alice")
    sign_with(key)
    access.init(examples, "alice@example.org", access.key_of(public(key), "alice.pub"))
    signers = tmp_path / "allowed_signers"
    where = str(examples.location)
    signers.write_text(git("--git-dir", where, "show", "main:access/allowed_signers").stdout)
    return examples, signers


@needs_ssh_keygen
def test_writes_sign_as_git_is_set_to_and_pass_the_access_rules(signed):
    store, signers = signed
    before = store.tip
    seen, results = serve(
        store,
        named("feedback", {"record_id": STRATEGY, "outcome": "helped"}),
        named("attest", {"record_id": STRATEGY, "outcome": "validated"}),
        flags=("--allow-write",),
    )
    given, attested = (answer(called, seen["tools"]) for called in results)
    log = git("--git-dir", str(store.location), "rev-list", f"{before}..main").stdout.split()
    assert len(log) == 2 and given["commit"] == log[1]
    assert attested["counts"]["validations"] == 1
    for sha in log:
        checked = verify_commit(store.location, sha, signers)
        assert checked.returncode == 0, checked.stderr
        assert 'Good "git" signature for alice@example.org' in checked.stderr
    # the verdict a server would give a push of these commits: history, access, gates
    verdict = kb("check", f"{before}..main", "--format", "json", "--store", str(store.location))
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr


@needs_ssh_keygen
def test_an_unsigned_writer_on_a_signed_store_gets_one_tool_error(signed):
    store, _ = signed
    git("config", "--global", "--unset", "commit.gpgsign")
    before = store.tip
    _, (given, attested, still) = serve(
        store,
        tool("feedback", {"record_id": STRATEGY, "outcome": "helped"}),
        tool("attest", {"record_id": STRATEGY, "outcome": "validated"}),
        tool("show", {"record_id": STRATEGY}),
        flags=("--allow-write",),
    )
    for result in (given, attested):
        lines = error_text(result).strip().splitlines()
        assert len(lines) == 1 and "requires signed commits" in lines[0], lines
        assert "commit.gpgsign" in lines[0] and "Traceback" not in lines[0]
    assert not still.is_error and still.structured_content["id"] == STRATEGY
    assert Store.open(store.location).tip == before


def test_print_config_blocks_parse_and_start_the_server(examples, tmp_path):
    store = examples
    where = str(store.location.resolve())
    printed = {c: kb("mcp", "--print-config", c, "--store", where).stdout.decode()
               for c in ("claude", "codex", "json")}  # fmt: skip
    # each is a whole file's content, as printed: .mcp.json, config.toml, a JSON document
    claude = json.loads(printed["claude"])["mcpServers"]["gitkb"]
    codex = tomllib.loads(printed["codex"])["mcp_servers"]["gitkb"]
    plain = json.loads(printed["json"])
    expected = ["git", "kb", "mcp", "--store", where]
    blocks = (claude, codex, plain)
    for block in blocks:
        assert [block["command"], *block["args"]] == expected
    assert claude["type"] == "stdio" and plain["transport"] == "stdio"
    writer = json.loads(kb("mcp", "--print-config", "json", "--allow-write", "--store",
                           where).stdout)["args"]  # fmt: skip
    assert writer[-1] == "--allow-write"
    bad = kb("mcp", "--print-config", "cursor", "--store", where)
    assert bad.returncode == 2
    # each printed command starts the server: `git kb` finds `git-kb` on PATH, as installed
    bin_dir = write_git_kb(tmp_path / "bin").parent
    steps = [named("show", {"record_id": STRATEGY})]
    for command, *args in {(b["command"], *b["args"]) for b in blocks}:  # one: they agree
        seen, (shown,) = anyio.run(_session, command, args, _env(str(bin_dir)), steps)
        assert sorted(seen["tools"]) == READ_TOOLS
        assert answer(shown, seen["tools"])["id"] == STRATEGY
