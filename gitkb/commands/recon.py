import click

from gitkb.commands import echo_json, store_option
from gitkb.commands.mine import mine_options, with_trace_options


@click.command("recon")
@click.argument("trace", type=click.Path(file_okay=False))
@with_trace_options
@click.option("--json", "as_json", is_flag=True, help="Print the recon as JSON.")
@store_option
def command(trace, vendor, arch, product, dsl, harness, label, as_json, store_path) -> None:
    """Read TRACE and print its evidence-density report; writes nothing."""
    from gitkb.commands.mine import _is_store
    from gitkb.mine.pipeline import run_recon
    from gitkb.mine.report import recon_markdown
    from gitkb.store import Store

    store = Store.open(store_path) if _is_store(store_path) else None
    document = run_recon(
        trace, store=store, label=label, options=mine_options(vendor, arch, product, dsl, harness)
    )
    if as_json:
        echo_json(document)
    else:
        click.echo(recon_markdown(document), nl=False)
