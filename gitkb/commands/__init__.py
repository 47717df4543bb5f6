"""One module per verb; each defines ``command``. Shared options live here."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cache

from gitkb import jsontext

# click is imported when a verb's click command is built, not by importing this package:
# the read verbs' quick start (gitkb.commands.argv) runs a verb without it.
_CLICK_PARTS = ("StoreType", "store_option", "store_option_if_any", "reason_option", "by_option")


@cache
def _click_parts() -> dict:
    import click

    class StoreType(click.ParamType):
        """A ``--store`` value opened as a ``Store``, so a verb gets the store, not a path:
        one opener (``Store.open``) and its messages for every verb. ``missing_ok``: None
        where the path holds no store (verbs that only read one when there is one)."""

        name = "directory"

        def __init__(self, missing_ok: bool = False) -> None:
            self.missing_ok = missing_ok

        def convert(self, value, param, ctx):
            if not isinstance(value, (str, os.PathLike)):
                return value  # already opened (a caller passing a Store)
            from gitkb.vcs import plain

            if self.missing_ok and plain.git_dir_of(value) is None:
                return None  # no repository, so no store: the store's code is not loaded
            from gitkb.store import Store

            return Store.open(value, missing_ok=self.missing_ok)

    def store_option(kind: StoreType):
        return click.option(
            "--store",
            "store",
            default=".",
            envvar="GITKB_STORE",
            show_default=True,
            type=kind,
            help="The store: a gitkb repository, bare or not (env GITKB_STORE).",
        )

    return {
        "StoreType": StoreType,
        "store_option": store_option(StoreType()),
        "store_option_if_any": store_option(StoreType(missing_ok=True)),
        # retract and unretract: the why and the who of a tombstone or its lifting.
        "reason_option": click.option(
            "--reason", required=True, help="Why (kept in the commit trailers and the ledger)."
        ),
        "by_option": click.option("--by", help="Who (default: the committer identity)."),
    }


def __getattr__(name: str):
    if name in _CLICK_PARTS:
        return _click_parts()[name]
    raise AttributeError(f"module 'gitkb.commands' has no attribute {name!r}")


def lazy_command(module: str, build: Callable[[], object]) -> Callable[[str], object]:
    """A verb module's ``__getattr__`` when the verb runs without click too (the quick
    start, ``gitkb.commands.argv``): its ``command`` is the click command ``build()``
    makes, on first use."""

    def attribute(name: str) -> object:
        if name == "command":
            return build()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return attribute


def echo_json(document: object) -> None:
    print(jsontext.dumps(document, indent=1, ensure_ascii=False))  # as click.echo writes it


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
