import sys

import click

from gitkb.commands import open_store, store_option


@click.command("show")
@click.argument("record_id")
@store_option
def command(record_id: str, store_path: str) -> None:
    """Print the record RECORD_ID exactly as stored."""
    store = open_store(store_path)
    sys.stdout.buffer.write(store.read_record(record_id).raw)
