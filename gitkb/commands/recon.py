import click

from gitkb.commands import echo_json, store_option_if_any
from gitkb.commands.mine import mine_options, with_trace_options
from gitkb.mine.reports import recon_markdown


@click.command("recon")
@click.argument("trace", type=click.Path(file_okay=False))
@with_trace_options
@click.option("--json", "as_json", is_flag=True, help="Print the recon as JSON.")
@store_option_if_any
def command(trace, label, as_json, store, **flags) -> None:
    """Read TRACE and print its evidence-density report; writes nothing."""
    from gitkb.mine.pipeline import run_recon

    document = run_recon(
        trace,
        store=store,
        label=label,
        options=mine_options(**flags),
    )
    if as_json:
        echo_json(document)
    else:
        click.echo(recon_markdown(document), nl=False)
