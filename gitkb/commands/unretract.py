import click

from gitkb.commands import by_option, echo_json, reason_option, writer_store_option


@click.command("unretract")
@click.argument("record_id")
@reason_option
@by_option
@writer_store_option
def command(record_id, reason, by, store) -> None:
    """Lift RECORD_ID's retraction: restore the status and score it had."""
    from gitkb.warmstart.retract import unretract

    admission = unretract(store, record_id, reason, by)
    echo_json(admission.as_json())
