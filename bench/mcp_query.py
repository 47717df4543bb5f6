"""`git kb mcp` latency: warm `query`, `resolve` and `show` tool calls through the official
MCP client, on a generated 10,000-record bare store.

The server runs as an agent's MCP client starts it (`git kb mcp --store PATH` over
stdio, gitkb's bytecode compiled once, as installed); the SDK's own ClientSession
drives it. After a few warm-up calls, each timed call is one round trip of the
agent's question (its arch as the runtime reports it, DSL, operator family, a few
words, brief, a budget): the server keeps one open store, so a warm call pays the
query, not the opening. Halfway through, another process admits a record, moving
`main`; the calls after it must see the new record (the server follows `main`). Then
`resolve` (a kernel's best code on its hardware, with the code and references inline,
under the tool's default byte budget) and `show` (one record by id) are timed alike.

(Not bench/mcp.py: a script of that name, on the path as bench/ is for the other
benches and tests, would hide the MCP SDK's own ``mcp`` package.)

    python bench/mcp_query.py [--records 10000] [--calls 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402
from stores import bench_store, bytecode_note, fresh_records, store_arguments  # noqa: E402

from gitkb.testing import synthetic  # noqa: E402

TARGET_P50_MS = 5
TARGET_P99_MS = 20
TARGET_RESOLVE_P50_MS = 10
TARGET_SHOW_P50_MS = 5
RESOLVE = {"kernel": "op007", "arch": "hopper"}
QUESTION = {"arch": "sm_90", "dsl": "triton", "family": "op007", "terms": "online softmax",
            "brief": True, "limit": 5, "max_bytes": 20000}  # fmt: skip
WARM_UP = 5


def _payload(result) -> dict:
    if result.is_error:
        raise SystemExit(f"a tool call failed: {result.content[0].text}")
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def _timed(session, tool: str, arguments: dict, calls: int) -> list[float]:
    """Milliseconds of ``calls`` warm calls of one tool (after a few warm-up calls)."""
    for _ in range(WARM_UP):
        _payload(await session.call_tool(tool, arguments))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        _payload(await session.call_tool(tool, arguments))
        times.append((time.perf_counter() - start) * 1000)
    return times


async def _calls(store_dir: Path, env: dict, calls: int, admit, shown: str) -> tuple[dict, dict]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "gitkb", "mcp", "--store",
                                   str(store_dir)], env=env)  # fmt: skip
    times: dict[str, list[float]] = {"query": []}
    seen: dict = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(WARM_UP):
            _payload(await session.call_tool("query", QUESTION))
        for n in range(calls):
            if n == calls // 2:
                seen["before"] = _payload(await session.call_tool("query", QUESTION))
                admitted = admit()
                after = _payload(await session.call_tool("query", {"terms": admitted}))
                seen["after"] = after
                seen["admitted"] = admitted
            start = time.perf_counter()
            _payload(await session.call_tool("query", QUESTION))
            times["query"].append((time.perf_counter() - start) * 1000)
        seen["resolved"] = _payload(await session.call_tool("resolve", RESOLVE))
        times["resolve"] = await _timed(session, "resolve", RESOLVE, calls // 2)
        times["show"] = await _timed(session, "show", {"record_id": shown}, calls // 2)
    return times, seen


def _in_process(store_dir: Path, shown: str, calls: int) -> dict[str, float]:
    """The baseline: p50 ms of the library calls each tool makes, in this process, on the
    same store (what a tool call costs besides the protocol)."""
    from gitkb.query import answer
    from gitkb.query.scope import Request
    from gitkb.store import Store
    from gitkb.warmstart import inline
    from gitkb.warmstart.resolve import resolve

    store = Store.open(store_dir)
    terms = QUESTION["terms"]
    request = Request(terms=(terms,), **{k: v for k, v in QUESTION.items() if k != "terms"})
    work = {
        "query": lambda: answer.query(store, request),
        "resolve": lambda: inline.fit(resolve(store, shape="inline", **RESOLVE), 60_000),
        "show": lambda: answer.shown(store, shown),
    }
    out = {}
    for name, call in work.items():
        for _ in range(WARM_UP):
            call()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1000)
        out[name] = statistics.median(times)
    store.cache.close()
    return out


def _percentiles(times: list[float]) -> tuple[float, float, float]:
    ordered = sorted(times)
    return (statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            ordered[-1])  # fmt: skip


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_arguments(parser)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with bench_store(args, ROOT) as (work, store_dir, built_s, env):
        subprocess.run([sys.executable, "-m", "gitkb", "--version"], env=env, check=True,
                       capture_output=True)  # fmt: skip
        incoming = work / "incoming.json"

        def admit() -> str:
            """Another process admits one new record (main moves); its id."""
            raw = fresh_records(args.records + int(time.time()) % 100_000, 1)[0]
            incoming.write_bytes(raw)
            subprocess.run([sys.executable, "-m", "gitkb", "admit", str(incoming), "--store",
                            str(store_dir)], env=env, check=True, capture_output=True)  # fmt: skip
            return json.loads(raw)["id"]

        shown = synthetic.strategy(0)["id"]
        times, seen = anyio.run(_calls, store_dir, env, args.calls, admit, shown)
        baseline = _in_process(store_dir, shown, args.calls // 2)
    p50, p99, top = _percentiles(times["query"])
    found = [r["id"] for r in seen["after"]["records"]]
    moved = seen["after"]["result"]["commit"] != seen["before"]["result"]["commit"]
    resolved = seen["resolved"]
    print(f"store                  {args.records} records, bare (built in {built_s:.1f} s)")
    print(bytecode_note(env))
    print(f"warm query tool calls  {len(times['query'])}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
          f"max {top:.2f} ms")  # fmt: skip
    print(
        f"main moved mid-run     {'yes' if moved else 'NO'}; the next call "
        f"{'served' if seen['admitted'] in found else 'did NOT serve'} the new record"
    )
    print(f"resolve answer         read_reason {resolved['read_reason']}, "
          f"{len(resolved['ranks'])} ranks with code inline, "
          f"{len(json.dumps(resolved))} bytes")  # fmt: skip
    for tool in ("resolve", "show"):
        t50, t99, tmax = _percentiles(times[tool])
        print(f"warm {tool} tool calls{' ' * (8 - len(tool))}{len(times[tool])}: p50 {t50:.2f} ms, "
              f"p99 {t99:.2f} ms, max {tmax:.2f} ms")  # fmt: skip
    for tool in ("query", "resolve", "show"):
        t50 = _percentiles(times[tool])[0]
        ratio = t50 / baseline[tool]
        print(f"baseline {tool}{' ' * (8 - len(tool))}       the library call in-process: p50 "
              f"{baseline[tool]:.2f} ms; the tool call is {ratio:.1f}x it")  # fmt: skip
    figure(f"mcp warm query call p50, {args.records} records", p50, "ms", TARGET_P50_MS, "lower")
    figure(f"mcp warm query call p99, {args.records} records", p99, "ms", TARGET_P99_MS, "lower")
    figure(f"mcp warm resolve call p50, {args.records} records", _percentiles(times["resolve"])[0],
           "ms", TARGET_RESOLVE_P50_MS, "lower")  # fmt: skip
    figure(f"mcp warm show call p50, {args.records} records", _percentiles(times["show"])[0],
           "ms", TARGET_SHOW_P50_MS, "lower")  # fmt: skip


if __name__ == "__main__":
    main()
