import click

from gitkb.commands import by_option, echo_json, reason_option, writer_store_option


@click.command("retract")
@click.argument("record_id")
@reason_option
@by_option
@writer_store_option
def command(record_id, reason, by, store) -> None:
    """Take RECORD_ID back: status deprecated, score 0; the record stays."""
    from gitkb.warmstart.retract import retract

    admission = retract(store, record_id, reason, by)
    echo_json(admission.as_json())
