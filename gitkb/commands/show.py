"""``git kb show``."""

import sys

import click

from gitkb.commands import store_option
from gitkb.store import Store


@click.command("show")
@click.argument("record_id")
@store_option
def command(record_id: str, store: Store) -> None:
    """Print the record RECORD_ID exactly as stored."""
    sys.stdout.buffer.write(store.read_record(record_id).raw)
