import click

from gitkb.commands import echo_json, store_option


@click.command("curate")
@click.option(
    "--retire",
    is_flag=True,
    help="List the records whose ledger's retire hint fired (the pass to run).",
)
@click.option("--apply", is_flag=True, help="Retract them, one commit each (reason: the hint).")
@click.option("--by", help="Who (default: the committer identity).")
@store_option
def command(retire, apply, by, store) -> None:
    """Act on the store's curation hints, as JSON; a dry run unless --apply."""
    from gitkb.errors import GitkbError
    from gitkb.warmstart.retract import retire_pass

    if not retire:
        raise GitkbError("curate needs a pass to run: --retire", 2)
    echo_json(retire_pass(store, apply, by))
