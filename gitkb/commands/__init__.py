"""One module per verb; each defines ``command``. Shared options live here."""

from __future__ import annotations

import json
import sys

import click

store_option = click.option(
    "--store",
    "store_path",
    default=".",
    envvar="GITKB_STORE",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The store: a gitkb repository, bare or not (env GITKB_STORE).",
)


# retract and unretract: the why and the who of a tombstone or its lifting.
reason_option = click.option(
    "--reason", required=True, help="Why (kept in the commit trailers and the ledger)."
)
by_option = click.option("--by", help="Who (default: the committer identity).")


def open_store(path: str):
    from gitkb.store import Store

    return Store.open(path)


def echo_json(document: object) -> None:
    click.echo(json.dumps(document, indent=1, ensure_ascii=False))


def input_name(path: str) -> str:
    """How messages name a record file given on the command line."""
    return "<stdin>" if path == "-" else path


def read_input(path: str) -> bytes:
    """Bytes of a record file named on the command line ('-' is stdin)."""
    from gitkb.errors import RecordError

    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise RecordError(f"{path}: {exc.strerror}") from None
