import click

from gitkb.commands import store_option
from gitkb.query.mcp_server import serve


@click.command("mcp")
@store_option
def command(store) -> None:
    """Serve the store to coding agents as MCP tools over stdio: query, resolve, show, feedback.

    Needs the MCP SDK: pip install 'gitkb[mcp]'. Point an agent's MCP client at
    `git kb mcp --store PATH` (a bare clone works).
    """
    serve(store)
