"""``git kb resolve``."""

import click

from gitkb.commands import echo_json, store_option
from gitkb.store import Store
from gitkb.warmstart.curate import ANY_LANGUAGE, LANGUAGES
from gitkb.warmstart.resolve import resolve


def _finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value != value:  # nan compares unequal to itself and passes every range check
        raise click.BadParameter("must be a number, not nan")
    return value


@click.command("resolve")
@click.option(
    "--kernel",
    required=True,
    type=click.Path(),  # a name, or a file whose diff a candidate must apply to
    help="Kernel name or file (basename, case and language prefixes ignored).",
)
@click.option(
    "--arch",
    help="Hardware arch (hopper, cdna3, ...: every product of it) or a token of the target table.",
)
@click.option(
    "--product",
    help="Hardware product token (h100, mi300x, gfx942, gfx1201, ...): offers records measured "
    "on that product's page only.",
)
@click.option(
    "--dsl",
    type=click.Choice([*LANGUAGES, ANY_LANGUAGE], case_sensitive=False),
    help="The kernel's language: only records in it are offered (default: what the kernel's "
    "name says, e.g. triton_x.py; 'any': every language).",
)
@store_option
@click.option("--top-n", default=3, show_default=True, type=int, help="Ranks to offer.")
@click.option(
    "--min-speedup",
    default=1.05,
    show_default=True,
    type=click.FloatRange(min=0.0, max=1e6),
    callback=_finite,
    help="Floor on the speedup.",
)
@click.option("--include-retired", is_flag=True, help="Also offer retracted records.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Write candidates/NN/ and kb_references/ here (before any verdict); with --format "
    "geak, GEAK's layout: kb_artifacts/<gfx>/<class>/<slug>/<exp_id>/ and kb_references/.",
)
@click.option(
    "--format",
    "shape",
    type=click.Choice(["gitkb", "geak"]),
    default="gitkb",
    show_default=True,
    help="geak: GEAK's resolve answer (candidates with exp_dir and patch_path; its read "
    "reasons), so GEAK's lane reads gitkb unchanged.",
)
@click.option(
    "--geak-key",
    is_flag=True,
    help="Print only the page's GEAK service keys (geak:kernel:<gfx>:<kernel_name>:<backend>:"
    "rocm[:<major.minor>]).",
)
def command(
    kernel: str,
    arch: str | None,
    product: str | None,
    dsl: str | None,
    store: Store,
    top_n: int,
    min_speedup: float,
    include_retired: bool,
    out: str | None,
    shape: str,
    geak_key: bool,
) -> None:
    """Print the store's best same-hardware code for a kernel, as one JSON document.

    Exit 0 for every answer that is a fact about the store (read_reason says
    which); a store path that does not exist or is not a store is an error.
    """
    answer = resolve(
        store,
        kernel,
        arch=arch,
        product=product,
        top_n=top_n,
        min_speedup=min_speedup,
        include_retired=include_retired,
        dsl=dsl,
        out=None if geak_key else out,
        shape="gitkb" if geak_key else shape,
    )
    if geak_key:
        hardware = answer["hardware"] or {}
        answer = {"read_reason": answer["read_reason"], "product": hardware.get("page"),
                  "kernel": answer["kernel"], "keys": answer.get("geak_keys", [])}  # fmt: skip
    echo_json(answer)
