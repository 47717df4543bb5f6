"""The block each MCP client needs to start ``git kb mcp`` on a store (``--print-config``).

Each block is a whole file's content, usable as printed (redirected into the file, or
merged into one that holds other servers):

- Claude Code: the project-scoped ``.mcp.json`` at the project's root, its
  ``mcpServers.gitkb`` entry (``type``, ``command``, ``args``), which ``claude mcp add
  --scope project`` writes too;
- Codex: the ``[mcp_servers.gitkb]`` table (``command``, ``args``) of ``config.toml``
  (``~/.codex/config.toml``, or a trusted project's ``.codex/config.toml``);
- any other client: the stdio command as JSON (``command``, ``args``).

Every block starts the same command line: ``git kb mcp --store <absolute store path>``,
with ``--allow-write`` only when asked for.
"""

from __future__ import annotations

import json
from pathlib import Path

import tomli_w

from gitkb.errors import GitkbError

SERVER_NAME = "gitkb"
CLIENTS = ("claude", "codex", "json")


def command_line(store: Path, allow_write: bool = False) -> list[str]:
    """The stdio command that serves ``store``: ``git`` and its arguments."""
    return ["git", "kb", "mcp", "--store", str(store), *(["--allow-write"] if allow_write else [])]


def config_block(client: str, store: Path, allow_write: bool = False) -> str:
    """The text to print for ``client``, ending in a newline."""
    command, *args = command_line(store, allow_write)
    if client == "claude":
        project = {"mcpServers": {SERVER_NAME: {"type": "stdio", "command": command,
                                                "args": args}}}  # fmt: skip
        return json.dumps(project, indent=2) + "\n"
    if client == "codex":
        return tomli_w.dumps({"mcp_servers": {SERVER_NAME: {"command": command, "args": args}}})
    if client == "json":
        return json.dumps({"name": SERVER_NAME, "transport": "stdio", "command": command,
                           "args": args}, indent=2) + "\n"  # fmt: skip
    raise GitkbError(f"unknown client {client!r}; use one of {', '.join(CLIENTS)}", 2)
