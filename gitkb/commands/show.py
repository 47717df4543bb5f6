"""``git kb show``."""

import sys

import click

from gitkb.commands import store_option


@click.command("show")
@click.argument("record_id")
@store_option
def command(record_id: str, store) -> None:
    """Print the record RECORD_ID exactly as stored."""
    sys.stdout.buffer.write(store.read_record(record_id).raw)
