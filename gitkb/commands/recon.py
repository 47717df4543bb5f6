from typing import Unpack

import click

from gitkb.commands import echo_json, store_option_if_any
from gitkb.commands.mine import TraceFlags, mine_options, with_trace_options
from gitkb.mine.reports import recon_markdown
from gitkb.store import Store


@click.command("recon")
@click.argument("trace", type=click.Path(file_okay=False))
@with_trace_options
@click.option("--json", "as_json", is_flag=True, help="Print the recon as JSON.")
@store_option_if_any
def command(
    trace: str,
    label: str | None,
    as_json: bool,
    store: Store | None,
    non_target_kernels: tuple[str, ...],
    **flags: Unpack[TraceFlags],
) -> None:
    """Read TRACE and print its evidence-density report; writes nothing."""
    from gitkb.mine.pipeline import run_recon

    document = run_recon(
        trace,
        store=store,
        label=label,
        options=mine_options(non_target_kernels, **flags),
    )
    if as_json:
        echo_json(document)
    else:
        click.echo(recon_markdown(document), nl=False)
