import click

from gitkb.commands import by_option, echo_json, open_store, reason_option, store_option


@click.command("retract")
@click.argument("record_id")
@reason_option
@by_option
@store_option
def command(record_id, reason, by, store_path) -> None:
    """Take RECORD_ID back: status deprecated, score 0; the record stays."""
    from gitkb.warmstart.retract import retract

    admission = retract(open_store(store_path), record_id, reason, by)
    echo_json(admission.as_json())
