"""``git kb mcp``: the store's agent verbs as MCP tools over stdio (the official Python SDK).

A coding agent that speaks the Model Context Protocol gets four tools on one store:
``query`` (the retrieval contract, as ``git kb query --json``), ``resolve`` (warm-start
code, as ``git kb resolve``), ``show`` (one record's served projection, payload in
full: what ``--brief`` left out) and ``feedback`` (what using a record did, one
append-only event). A gitkb error becomes the tool's error result, one line saying
what is wrong; stdout carries the protocol only.

The SDK is an optional extra (``pip install 'gitkb[mcp]'``), imported only here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, Literal

from gitkb.errors import GitkbError
from gitkb.query import answer, budget
from gitkb.query.answer import shown
from gitkb.query.feedback import feedback as give
from gitkb.query.scope import Request
from gitkb.warmstart.resolve import resolve as resolve_kernel

if TYPE_CHECKING:
    from gitkb.store.store import Store

INSTRUCTIONS = (
    "gitkb: a git-native store of GPU-kernel optimization experience. Call `query` with what "
    "your runtime reports (arch such as sm_90, 9.0, H100 or gfx942; dsl; operator family) "
    "and a few words about the problem: it answers strategies, anti-strategies and cards in "
    "that scope, ranked, with result.kind saying whether they are matches or only a labelled "
    "fallback sample. `show` gives one record in full, `resolve` the best prior code for a "
    "kernel, and `feedback` records whether a record helped, so later answers rank better."
)


def _sdk():
    try:
        from mcp.server import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise GitkbError(
            "git kb mcp needs the MCP SDK (mcp 2): pip install 'gitkb[mcp]'", 2
        ) from None
    return MCPServer, ToolError


def _as_tool_errors(tool_error: type[Exception]) -> Callable:
    """A tool run on the server's own thread (the SDK hands a plain function to a worker
    thread, and the open store's SQLite connection belongs to this one; the calls of one
    stdio client are answered in turn all the same), a gitkb error inside it becoming the
    tool's error result with its one line. Its answer goes out as the command line
    prints it (``git kb query --json``'s compact text, which ``max_bytes`` bounds) and as
    structured content, both made here: the SDK's own conversion would write the text
    again, indented, and check the document against ``dict[str, Any]`` on every call."""
    from mcp.types import CallToolResult, TextContent

    def wrap(fn: Callable) -> Callable:
        @wraps(fn)
        async def call(*args, **kwargs) -> CallToolResult:
            try:
                document = fn(*args, **kwargs)
            except GitkbError as exc:
                raise tool_error(exc.message) from None
            text = TextContent(type="text", text=budget.dumps(document))
            return CallToolResult(content=[text], structured_content=document)

        call.__annotations__ = {**fn.__annotations__, "return": CallToolResult}
        return call

    return wrap


def build(store: Store):
    """The MCP server of ``store``, its four tools registered. The server keeps the one
    open store (its index cache connection included) for its life: each call reads the
    commit ``main`` names then, so an admission elsewhere is seen by the next call."""
    mcp_server, tool_error = _sdk()
    server = mcp_server(name="gitkb", instructions=INSTRUCTIONS)
    guarded = _as_tool_errors(tool_error)

    @server.tool(description="Scoped, ranked knowledge (git kb query --json).")
    @guarded
    def query(
        terms: str = "",
        arch: str | None = None,
        vendor: str | None = None,
        dsl: str | None = None,
        family: str | None = None,
        operator: str | None = None,
        type: str | None = None,
        tier: str | None = None,
        symptom: str | None = None,
        strict_arch: bool = False,
        cross_arch: bool = False,
        any_term: bool = False,
        exclude: list[str] | None = None,
        min_gain: float | None = None,
        min_speedup: float | None = None,
        rank: Literal["blend", "text", "importance"] = "blend",
        limit: int = 8,
        brief: bool = False,
        max_bytes: int | None = None,
        coverage: bool = False,
    ) -> dict[str, Any]:
        request = Request(
            terms=(terms,),
            arch=arch,
            vendor=vendor,
            dsl=dsl,
            family=family,
            operator=operator,
            type=type,
            tier=tier,
            symptom=symptom,
            strict_arch=strict_arch,
            cross_arch=cross_arch,
            any_term=any_term,
            exclude=frozenset(exclude or ()),
            min_gain=min_gain,
            min_speedup=min_speedup,
            rank=rank,
            limit=limit,
            brief=brief,
            max_bytes=max_bytes,
        )
        if coverage:
            return answer.coverage(store, request)
        return answer.query(store, request)

    @server.tool(description="One record's served projection, payload in full.")
    @guarded
    def show(record_id: str) -> dict[str, Any]:
        return shown(store, record_id)

    @server.tool(description="The store's best same-hardware code for a kernel (git kb resolve).")
    @guarded
    def resolve(
        kernel: str,
        arch: str | None = None,
        product: str | None = None,
        dsl: str | None = None,
        top_n: int = 3,
        min_speedup: float = 1.05,
    ) -> dict[str, Any]:
        return resolve_kernel(
            store, kernel, arch=arch, product=product, dsl=dsl, top_n=top_n,
            min_speedup=min_speedup,
        )  # fmt: skip

    @server.tool(description="Report what using a record did: helped, no-effect or misleading.")
    @guarded
    def feedback(
        record_id: str,
        outcome: Literal["helped", "no-effect", "misleading"],
        trace: str | None = None,
        trace_commit: str | None = None,
        by: str | None = None,
    ) -> dict[str, Any]:
        admission = give(store, record_id, outcome, trace, trace_commit, by)
        return admission.as_json()

    return server


def serve(store: Store) -> None:
    """Serve the store's tools over stdio until the client closes the connection."""
    build(store).run("stdio")
