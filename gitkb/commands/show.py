import click

from gitkb.commands import store_option


@click.command("show")
@click.argument("record_id")
@store_option
def command(record_id: str, store) -> None:
    """Print the record RECORD_ID exactly as stored."""
    click.get_binary_stream("stdout").write(store.read_record(record_id).raw)
