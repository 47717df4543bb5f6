import click

from gitkb.agents.registration import CLIENTS, config_block
from gitkb.commands import store_option
from gitkb.query.mcp_server import serve
from gitkb.store import Store


@click.command("mcp")
@click.option(
    "--allow-write",
    is_flag=True,
    help="Also serve the feedback and attest tools (each call one store commit).",
)
@click.option(
    "--print-config",
    "client",
    type=click.Choice(CLIENTS),
    help="Print the file content that registers this server with CLIENT, and exit: claude "
    "(.mcp.json), codex (config.toml's [mcp_servers.gitkb]) or json (the stdio command).",
)
@store_option
def command(allow_write: bool, client: str | None, store: Store) -> None:
    """Serve the store to coding agents as MCP tools over stdio: query, resolve, show,
    vocabulary, and each record as gitkb://record/<id>.

    Read-only unless --allow-write, which adds feedback and attest. Needs the MCP SDK:
    pip install 'gitkb[mcp]'. Point an agent's MCP client at `git kb mcp --store PATH`
    (a bare clone works); --print-config prints the block each client needs.
    """
    if client is not None:
        click.echo(config_block(client, store.location.resolve(), allow_write), nl=False)
        return
    serve(store, allow_write)
