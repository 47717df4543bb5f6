"""One module per verb; each defines ``command``. Shared options live here."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click
from click.decorators import FC

from gitkb.errors import RecordError
from gitkb.store import Store
from gitkb.vcs import plain

if TYPE_CHECKING:
    from gitkb.store.writer import Admission


class StoreType(click.ParamType):
    """A ``--store`` value opened as a ``Store``, so a verb gets the store, not a path:
    one opener (``Store.open``) and its messages for every verb. ``missing_ok``: None
    where the path holds no store (verbs that only read one when there is one)."""

    name = "directory"

    def __init__(self, missing_ok: bool = False, writes: bool = False) -> None:
        self.missing_ok = missing_ok
        self.writes = writes  # refuse at once a writer the store's [access] refuses

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> Store | None:
        if not isinstance(value, (str, os.PathLike)):
            return value  # type: ignore[return-value]  # already opened (a caller passing a Store)
        if self.missing_ok and plain.git_dir_of(value) is None:
            return None  # no repository, so no store
        store = Store.open(value, missing_ok=self.missing_ok)
        if store is not None and self.writes:
            store.require_signing()
        return store


def _store_option(kind: StoreType) -> Callable[[FC], FC]:
    return click.option(
        "--store",
        "store",
        default=".",
        envvar="GITKB_STORE",
        show_default=True,
        type=kind,
        help="The store: a gitkb repository, bare or not (env GITKB_STORE).",
    )


store_option = _store_option(StoreType())
# The verbs that always write: a store requiring signatures refuses them before any work.
writer_store_option = _store_option(StoreType(writes=True))
store_option_if_any = _store_option(StoreType(missing_ok=True))


def tombstone_command(
    name: str, change: Callable[[Store, str, str, str | None], Admission], summary: str
) -> click.Command:
    """retract and unretract: one commit that sets or lifts RECORD_ID's tombstone, with the
    why (``--reason``) and the who (``--by``) in its trailers and the ledger."""

    @click.command(name, help=summary)
    @click.argument("record_id")
    @click.option(
        "--reason", required=True, help="Why (kept in the commit trailers and the ledger)."
    )
    @click.option("--by", help="Who (default: the committer identity).")
    @writer_store_option
    def command(record_id: str, reason: str, by: str | None, store: Store) -> None:
        echo_json(change(store, record_id, reason, by).as_json())

    return command


def echo_json(document: object) -> None:
    click.echo(json.dumps(document, indent=1, ensure_ascii=False))


def input_name(path: str) -> str:
    """How messages name a record file given on the command line."""
    return "<stdin>" if path == "-" else path


def read_input(path: str) -> bytes:
    """Bytes of a record file named on the command line ('-' is stdin)."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise RecordError(f"{path}: {exc.strerror}") from None
