"""``git kb mcp``: the store's agent verbs as MCP tools over stdio (the official Python SDK).

A coding agent that speaks the Model Context Protocol gets, on one store, the read-only
tools ``query`` (the retrieval contract, as ``git kb query --json``), ``resolve`` (the
code and references ``git kb resolve`` serves, inline, under a byte budget), ``show``
(one record's served projection, payload in full) and ``vocabulary`` (the ``--list-*``
answers), and each record as the resource ``gitkb://record/<id>``. Only a server started
with ``allow_write`` (``git kb mcp --allow-write``) has ``feedback`` and ``attest``,
which write through the library functions ``git kb feedback`` and ``git kb attest`` call,
so one writer makes every store commit. Every tool states an output schema
(``mcp_schemas``) and a bound on each argument; a gitkb error becomes the tool's error
result, one line saying what is wrong; stdout carries the protocol only.

The SDK is an optional extra (``pip install 'gitkb[mcp]'``), imported only here, in
``build``: this module's tool functions are declared there, their constraints made of
the SDK's own pydantic (so no ``from __future__ import annotations`` here).
"""

import json
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Annotated, Any, Literal

from gitkb import record as rec
from gitkb.errors import GitkbError, echoed
from gitkb.query import answer, mcp_schemas
from gitkb.query.answer import shown
from gitkb.query.answer import vocabulary as listed
from gitkb.query.feedback import OUTCOMES as FEEDBACK_OUTCOMES
from gitkb.query.feedback import feedback as give
from gitkb.query.scope import LISTABLE, TIERS, Request
from gitkb.warmstart import inline
from gitkb.warmstart.attest import OUTCOMES as ATTEST_OUTCOMES
from gitkb.warmstart.attest import attested, parse_evidence
from gitkb.warmstart.resolve import resolve as resolve_kernel

if TYPE_CHECKING:
    from gitkb.store.store import Store

RECORD_URI = "gitkb://record/{record_id}"
# Bounds on what a caller may send: a question, an id, a label are short; a list is short.
TEXT_MAX = 2000
ID_MAX = 200
EVIDENCE_MAX = 32
MAX_BYTES_FLOOR, MAX_BYTES_CEILING = 256, 10_000_000

INSTRUCTIONS = (
    "gitkb: a git-native store of GPU-kernel optimization experience. Call `query` with what "
    "your runtime reports (arch such as sm_90, 9.0, H100 or gfx942; dsl; operator family) "
    "and a few words about the problem: it answers strategies, anti-strategies and cards in "
    "that scope, ranked, with result.kind saying whether they are matches or only a labelled "
    "fallback sample. `vocabulary` lists the store's values of one filter, `show` gives one "
    "record in full (also the resource gitkb://record/<id>), and `resolve` the best prior "
    "code for a kernel on this hardware, with its references, under max_bytes."
)
WRITE_INSTRUCTIONS = (
    " This server may write: `feedback` records whether a record you used helped (so later "
    "answers rank better) and `attest` what a resolve candidate did on hardware; report "
    "only outcomes you measured."
)


def _sdk() -> tuple[Any, Any, Any, Any]:
    try:
        from mcp.server import MCPServer
        from mcp.server.mcpserver.exceptions import ResourceError, ToolError
        from mcp.server.mcpserver.tools import Tool
    except ImportError:
        raise GitkbError(
            "git kb mcp needs the MCP SDK (mcp 2): pip install 'gitkb[mcp]'", 2
        ) from None
    return MCPServer, Tool, ToolError, ResourceError


def _as_tool_errors(tool_error: type[Exception]) -> Callable:
    """A tool run on the server's own thread (the SDK hands a plain function to a worker
    thread, and the open store's SQLite connection belongs to this one; the calls of one
    stdio client are answered in turn all the same), a gitkb error inside it becoming the
    tool's error result with its one line. Its answer goes out as the command line
    prints it (``git kb query --json``'s compact text, which ``max_bytes`` bounds) and as
    structured content, both made here: the SDK's own conversion would write the text
    again, indented, and check the document against its schema on every call."""
    from mcp.types import CallToolResult, TextContent

    def wrap(fn: Callable) -> Callable:
        @wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> CallToolResult:
            try:
                document = fn(*args, **kwargs)
            except GitkbError as exc:
                raise tool_error(exc.message) from None
            text = TextContent(type="text", text=_dumps(document))
            return CallToolResult(content=[text], structured_content=document)

        call.__annotations__ = {**fn.__annotations__, "return": CallToolResult}
        return call

    return wrap


def _dumps(document: object) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _record_id(record_id: str) -> str:
    """A record id as the store spells them, at most ``ID_MAX`` characters (the bound every
    tool's id argument has; a resource's id comes here unbounded); anything else (a path, a
    URI) is refused before the store is asked."""
    if len(record_id) > ID_MAX or not rec.is_id(record_id):
        raise GitkbError(
            f"{echoed(record_id)} is not a record id (at most {ID_MAX} characters: a-z or "
            "0-9, then a-z, 0-9, '.', '_' or '-')", 2,
        )  # fmt: skip
    return record_id


def _kernel_name(kernel: str) -> str:
    """A kernel name; a path (the server never reads the caller's files) is refused."""
    if any(c in kernel for c in "/\\\0") or kernel.strip() in (".", ".."):
        raise GitkbError(
            f"kernel {echoed(kernel)} is a path: the MCP resolve takes a kernel name "
            "(e.g. triton_softmax.py), never a file to read", 2,
        )  # fmt: skip
    return kernel


def _tools(store: "Store", allow_write: bool, tool_cls: Any, tool_error: Any) -> list:
    """The server's tools, each with its output schema and read-only or write hints."""
    from mcp.types import ToolAnnotations
    from pydantic import Field

    guarded = _as_tool_errors(tool_error)
    Text = Annotated[str, Field(max_length=TEXT_MAX)]
    Id = Annotated[str, Field(min_length=1, max_length=ID_MAX)]
    OptionalText = Annotated[str | None, Field(max_length=TEXT_MAX)]
    Count = Annotated[int, Field(strict=True, ge=1, le=100)]
    Flag = Annotated[bool, Field(strict=True)]
    Number = Annotated[float | None, Field(allow_inf_nan=False, ge=0, le=1e6)]
    Budget = Annotated[int | None, Field(strict=True, ge=MAX_BYTES_FLOOR, le=MAX_BYTES_CEILING)]

    def query(
        terms: Text = "",
        arch: OptionalText = None,
        vendor: OptionalText = None,
        dsl: OptionalText = None,
        family: OptionalText = None,
        operator: OptionalText = None,
        type: OptionalText = None,
        tier: Literal[TIERS] | None = None,  # type: ignore[valid-type]
        symptom: OptionalText = None,
        technique: OptionalText = None,
        strict_arch: Flag = False,
        cross_arch: Flag = False,
        any_term: Flag = False,
        exclude: Annotated[list[Id] | None, Field(max_length=200)] = None,
        min_gain: Annotated[float | None, Field(allow_inf_nan=False)] = None,
        min_speedup: Number = None,
        rank: Literal["blend", "text", "importance"] = "blend",
        limit: Count = 8,
        brief: Flag = False,
        max_bytes: Budget = None,
        coverage: Flag = False,
    ) -> dict[str, Any]:
        request = Request(
            terms=(terms,), arch=arch, vendor=vendor, dsl=dsl, family=family,
            operator=operator, type=type, tier=tier, symptom=symptom, technique=technique,
            strict_arch=strict_arch, cross_arch=cross_arch, any_term=any_term,
            exclude=frozenset(exclude or ()), min_gain=min_gain, min_speedup=min_speedup,
            rank=rank, limit=limit, brief=brief, max_bytes=max_bytes,
        )  # fmt: skip
        if coverage:
            return answer.coverage(store, request)
        return answer.query(store, request)

    def show(record_id: Id) -> dict[str, Any]:
        return shown(store, _record_id(record_id))

    def vocabulary(
        name: Literal[LISTABLE],  # type: ignore[valid-type]
        like: OptionalText = None,
    ) -> dict[str, Any]:
        return listed(store, name, like)

    def resolve(
        kernel: Id,
        arch: OptionalText = None,
        product: OptionalText = None,
        dsl: OptionalText = None,
        top_n: Annotated[int, Field(strict=True, ge=1, le=20)] = 3,
        min_speedup: Annotated[float, Field(allow_inf_nan=False, ge=0, le=1e6)] = 1.05,
        include_retired: Flag = False,
        max_bytes: Budget = 60_000,
    ) -> dict[str, Any]:
        found = resolve_kernel(
            store, _kernel_name(kernel), arch=arch, product=product, dsl=dsl, top_n=top_n,
            min_speedup=min_speedup, include_retired=include_retired, shape="inline",
        )  # fmt: skip
        return inline.fit(found, max_bytes)

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                idempotent_hint=True, open_world_hint=False)  # fmt: skip
    described: list[tuple[Callable, str, dict]] = [
        (query, "Scoped, ranked knowledge (git kb query --json).", mcp_schemas.QUERY),
        (resolve, "The store's best same-hardware code for a kernel, with its references, "
                  "under max_bytes (git kb resolve).", mcp_schemas.RESOLVE),
        (show, "One record's served projection, payload in full.", mcp_schemas.SERVED_RECORD),
        (vocabulary, "The store's values of one filter (git kb query --list-*).",
         mcp_schemas.VOCABULARY),
    ]  # fmt: skip
    tools = [_tool(tool_cls, guarded(fn), text, schema, read_only)
             for fn, text, schema in described]  # fmt: skip
    if allow_write:
        tools += _write_tools(store, tool_cls, guarded, Id, OptionalText)
    return tools


def _write_tools(
    store: "Store", tool_cls: Any, guarded: Callable, Id: Any, OptionalText: Any
) -> list:
    """``feedback`` and ``attest``: the write path ``git kb feedback`` and ``git kb attest``
    take (``gitkb.query.feedback.feedback``, ``gitkb.warmstart.attest.attested``)."""
    from mcp.types import ToolAnnotations
    from pydantic import Field

    Label = Annotated[str | None, Field(max_length=ID_MAX)]

    def feedback(
        record_id: Id,
        outcome: Literal[FEEDBACK_OUTCOMES],  # type: ignore[valid-type]
        trace: Label = None,
        trace_commit: Annotated[str | None, Field(max_length=64)] = None,
        by: Label = None,
    ) -> dict[str, Any]:
        admission = give(store, _record_id(record_id), outcome, trace, trace_commit, by)
        return admission.as_json()

    def attest(
        record_id: Id,
        outcome: Literal[ATTEST_OUTCOMES],  # type: ignore[valid-type]
        by: Label = None,
        evidence: Annotated[
            dict[Annotated[str, Field(max_length=64)], OptionalText] | None,
            Field(max_length=EVIDENCE_MAX),
        ] = None,
    ) -> dict[str, Any]:
        pairs = parse_evidence([f"{k}={v or ''}" for k, v in (evidence or {}).items()])
        return attested(store, _record_id(record_id), outcome, by, pairs)

    appends = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                              open_world_hint=False)  # fmt: skip
    return [
        _tool(tool_cls, guarded(feedback), "Report what using a record did: helped, no-effect "
              "or misleading (one append-only commit, git kb feedback).", mcp_schemas.FEEDBACK,
              appends),
        _tool(tool_cls, guarded(attest), "Record what a resolve candidate did on hardware: "
              "validated, failed, not_reproduced or inapplicable (one commit, git kb attest).",
              mcp_schemas.ATTEST, appends),
    ]  # fmt: skip


def _tool(tool_cls: Any, fn: Callable, description: str, schema: dict, annotations: Any) -> Any:
    """A registered tool whose output schema is ``schema`` (advertised to the client, which
    checks each answer against it)."""
    tool = tool_cls.from_function(fn, description=description, annotations=annotations)
    tool.fn_metadata.output_schema = schema
    return tool


def build(store: "Store", allow_write: bool = False) -> Any:
    """The MCP server of ``store``: its tools and its record resources. The server keeps
    the one open store (its index cache connection included) for its life: each call
    reads the commit ``main`` names then, so an admission elsewhere is seen by the next."""
    mcp_server, tool_cls, tool_error, resource_error = _sdk()
    instructions = INSTRUCTIONS + (WRITE_INSTRUCTIONS if allow_write else "")
    server = mcp_server(name="gitkb", instructions=instructions,
                        tools=_tools(store, allow_write, tool_cls, tool_error))  # fmt: skip

    @server.resource(
        RECORD_URI,
        name="record",
        mime_type="application/json",
        description="One record's served projection, as the show tool answers.",
    )
    async def record(record_id: str) -> str:  # fmt: skip
        try:
            return _dumps(shown(store, _record_id(record_id)))
        except GitkbError as exc:
            raise resource_error(exc.message) from None

    return server


def serve(store: "Store", allow_write: bool = False) -> None:
    """Serve the store's tools over stdio until the client closes the connection."""
    build(store, allow_write).run("stdio")
