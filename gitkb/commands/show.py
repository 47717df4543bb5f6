"""``git kb show``. Importing this module loads no click: the read verbs' quick start
(``gitkb.commands.argv``) calls ``run`` with the parameters click would pass, and the
click command (``command``) is built on first use, for help and for every other
command line."""

import sys
from functools import cache

from gitkb.commands import lazy_command


def run(record_id: str, store) -> None:
    """The verb: the record's bytes, exactly as stored (help: ``command``)."""
    sys.stdout.buffer.write(store.read_record(record_id).raw)


@cache
def _command():
    import click

    from gitkb.commands import store_option

    @click.command("show")
    @click.argument("record_id")
    @store_option
    def command(record_id: str, store) -> None:
        """Print the record RECORD_ID exactly as stored."""
        run(record_id, store)

    return command


__getattr__ = lazy_command(__name__, _command)
