import click

from gitkb.commands import echo_json, open_store, store_option


@click.command("retract")
@click.argument("record_id")
@click.option("--reason", required=True, help="Why (kept in the commit trailers and the ledger).")
@click.option("--by", help="Who (default: the committer identity).")
@store_option
def command(record_id, reason, by, store_path) -> None:
    """Take RECORD_ID back: status deprecated, score 0; the record stays."""
    from gitkb.warmstart.retract import retract

    admission = retract(open_store(store_path), record_id, reason, by)
    echo_json(admission.as_json())
