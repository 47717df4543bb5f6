import click

from gitkb.commands import echo_json, store_option
from gitkb.errors import GitkbError
from gitkb.store import Store


@click.command("curate")
@click.option(
    "--retire",
    is_flag=True,
    help="List the records whose ledger's retire hint fired (the pass to run).",
)
@click.option(
    "--cards",
    is_flag=True,
    help="Plan a technique card per technique two traces (or two pages) support.",
)
@click.option("--apply", is_flag=True, help="Make the pass's commits (retractions, cards).")
@click.option("--by", help="Who (default: the committer identity).")
@store_option
def command(retire: bool, cards: bool, apply: bool, by: str | None, store: Store) -> None:
    """Act on the store's curation hints, as JSON; a dry run unless --apply."""
    if retire == cards:
        raise GitkbError("curate needs one pass to run: --retire or --cards", 2)
    if cards:
        from gitkb.warmstart.curate_cards import cards_pass

        echo_json(cards_pass(store, apply, by))
        return
    from gitkb.warmstart.retract import retire_pass

    echo_json(retire_pass(store, apply, by))
