import click

from gitkb.commands import store_option


@click.command("report")
@click.option(
    "--out",
    "out_dir",
    default="kb-report",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder to write the site into.",
)
@store_option
def command(out_dir: str, store) -> None:
    """Write the reviewer's summary of the store as a static site (HTML, inline SVG).

    One page for the store (records by type/arch/operator, admission history,
    open conflicts, attestations) and one per mined trace (its version ladder).
    """
    from pathlib import Path

    from gitkb.layout import TRACE_REFS
    from gitkb.site import build_site, trace_ladder

    labels = [ref.removeprefix(TRACE_REFS) for ref in store.repo.refs(TRACE_REFS)]
    ladders = {label: trace_ladder(store, label) for label in labels}
    pages = build_site(store, Path(out_dir), ladders)
    click.echo(f"wrote {len(pages)} pages; open {pages[0]}")
