import click

from gitkb.commands import echo_json, open_store, store_option


@click.command("unretract")
@click.argument("record_id")
@click.option("--reason", required=True, help="Why (kept in the commit trailers and the ledger).")
@click.option("--by", help="Who (default: the committer identity).")
@store_option
def command(record_id, reason, by, store_path) -> None:
    """Lift RECORD_ID's retraction: restore the status and score it had."""
    from gitkb.warmstart.retract import unretract

    admission = unretract(open_store(store_path), record_id, reason, by)
    echo_json(admission.as_json())
