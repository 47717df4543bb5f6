import json
from pathlib import Path

import click

from gitkb.commands import store_option
from gitkb.errors import GitkbError
from gitkb.layout import TRACE_REFS
from gitkb.report import build_site, trace_ladder
from gitkb.store import Store


@click.command("report")
@click.option(
    "--out",
    "out_dir",
    default="kb-report",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder to write the site into.",
)
@click.option(
    "--flywheel",
    "flywheel_file",
    type=click.Path(dir_okay=False, exists=True),
    help="A bench/flywheel.py --json document to plot.",
)
@store_option
def command(out_dir: str, flywheel_file: str | None, store: Store) -> None:
    """Write the reviewer's summary of the store as a static site (HTML, inline SVG).

    One page for the store (records by type/arch/operator, admission history,
    open conflicts, attestations) and one per mined trace (its version ladder).
    """
    labels = [ref.removeprefix(TRACE_REFS) for ref in store.repo.refs(TRACE_REFS)]
    ladders = {label: trace_ladder(store, label) for label in labels}
    flywheel = None
    if flywheel_file:
        try:
            flywheel = json.loads(Path(flywheel_file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            what = f"--flywheel {flywheel_file}: not a flywheel document ({exc})"
            raise GitkbError(what) from None
    pages = build_site(store, Path(out_dir), ladders, flywheel)
    click.echo(f"wrote {len(pages)} pages; open {pages[0]}")
