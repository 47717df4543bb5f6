import gc
import sys
from typing import TypedDict, Unpack

import click
from click.decorators import FC

from gitkb.commands import echo_json, store_option_if_any
from gitkb.record import DSLS
from gitkb.store import Store
from gitkb.trace.options import TraceOptions

trace_options = [
    click.option("--vendor", help="Override the trace's hardware: vendor (nvidia, amd, generic)."),
    click.option("--arch", help="Override the trace's hardware: arch (hopper, cdna3, ...)."),
    click.option("--product", help="Override the trace's hardware: product token (h100, ...)."),
    click.option("--dsl", type=click.Choice(DSLS), help="Override the DSL sniffed from kernel.py."),
    click.option("--harness", help="How the trace measured (shown as measured_on.harness)."),
    click.option(
        "--label",
        help="The trace label (default: the one the store holds the trace under, else the "
        "trace folder's name unless the records would echo it, else one gitkb picks).",
    ),
    click.option(
        "--operator",
        help="The operator's name when the trace's metadata names none "
        "(default: the kernel's entry point; never the trace label).",
    ),
    click.option(
        "--non-target-kernel",
        "non_target_kernels",
        multiple=True,
        help="A kernel name profiler captures may not be about (repeatable; default: the "
        "store's [mine] non_target_kernels, else torch's RNG fill kernel).",
    ),
]


def with_trace_options(func: FC) -> FC:
    for option in reversed(trace_options):
        func = option(func)
    return func


class TraceFlags(TypedDict, total=False):
    """The trace flags' values but --label and --non-target-kernel, by TraceOptions' names."""

    vendor: str | None
    arch: str | None
    product: str | None
    dsl: str | None
    harness: str | None
    operator: str | None


def mine_options(
    non_target_kernels: tuple[str, ...] = (), **flags: Unpack[TraceFlags]
) -> TraceOptions:
    """The TraceOptions the trace flags (all but --label) give."""
    return TraceOptions(non_target_kernels=tuple(non_target_kernels), **flags)


@click.command("mine")
@click.argument("trace", type=click.Path(file_okay=False))
@with_trace_options
@click.option(
    "--distiller",
    default="builtin",
    show_default=True,
    help="'builtin', or a command run once per packet ($GITKB_PACKET, $GITKB_BRIEF, $GITKB_OUT).",
)
@click.option(
    "--stage-only",
    type=click.Path(file_okay=False),
    help="Write records and reports "
    "into this folder (laid out like a store) instead of admitting them.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="How many packets an external --distiller works on at once.",
)
@click.option("--dry-run", is_flag=True, help="Read, partition and distill; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@store_option_if_any
def command(
    trace: str,
    label: str | None,
    distiller: str,
    stage_only: str | None,
    jobs: int,
    dry_run: bool,
    as_json: bool,
    store: Store | None,
    non_target_kernels: tuple[str, ...],
    **flags: Unpack[TraceFlags],
) -> None:
    """Mine TRACE (a trace repository) into records: admitted into the store, one commit each."""
    from gitkb.mine.pipeline import mine

    # A dry run or a staging run reads a store when there is one (ids, coverage); an
    # admitting run needs one (mine says so).
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if total < 50:
            return
        if bar is None:
            bar = click.progressbar(length=total, label="distilling", file=sys.stderr)
            bar.__enter__()
        bar.update(1)

    # A mining run is one batch: its rows, packets and records live until it ends and it
    # leaves next to no cyclic garbage, so a collection only walks them all again (about
    # 120 ms of a 10,000-version dry run; the same peak memory without).
    gc.disable()
    try:
        result = mine(
            trace,
            store=store,
            label=label,
            options=mine_options(non_target_kernels, **flags),
            distiller=distiller,
            stage_only=stage_only,
            dry_run=dry_run,
            progress=progress,
            jobs=jobs,
        )
    finally:
        gc.enable()
        if bar is not None:
            bar.__exit__(None, None, None)
    summary = result.summary()
    if summary["label_note"]:
        click.echo(f"gitkb: {summary['label_note']}", err=True)
    if as_json:
        echo_json(summary)
        return
    click.echo(
        f"{summary['label']}: {summary['versions']} versions, {summary['milestones']} "
        f"milestones, {summary['deadends']} dead-ends, {summary['pitfalls']} pitfalls"
    )
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items())) or "no records"
    click.echo(f"records: {counts}")
    for outcome in result.outcomes:
        if outcome.action == "skip":
            click.echo(f"  skipped {outcome.seg_id}: {outcome.note}")
