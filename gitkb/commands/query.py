"""``git kb query``."""

from typing import Any

import click
from click.decorators import FC

from gitkb.commands import echo_json, store_option
from gitkb.query import answer, budget, serve
from gitkb.query.scope import DEFAULT_FALLBACK_RATIO, DEFAULT_LIMIT, RANK_MODES, Request
from gitkb.record.worth import TIERS
from gitkb.store import Store

_LISTS = {
    "vendors": "vendor",
    "arch": "arch",
    "dsl": "dsl",
    "family": "family",
    "operators": "operator",
    "type": "type",
    "symptoms": "symptom",
    "tags": "tag",
    "techniques": "technique",
}


def _list_options(f: FC) -> FC:
    for flag, name in reversed(_LISTS.items()):
        f = click.option(
            f"--list-{flag}",
            "listing",
            flag_value=name,
            help=f"Print the store's {name} values, one a line (filter with --like), and exit.",
        )(f)
    return f


@click.command("query")
@click.argument("terms", nargs=-1)
@store_option
@click.option("--vendor", help="nvidia, amd or generic (vendor generic records are included).")
@click.option(
    "--arch",
    help="What the runtime reports: hopper, sm_90, 9.0, H100, H20, gfx942, mi300x, ...",
)
@click.option("--dsl", help="triton, cuda, gluon, ... (dsl 'any' records are included).")
@click.option("--family", help="Operator family, e.g. softmax.")
@click.option("--operator", help="An operator the record's scope lists.")
@click.option("--type", "type_", help="Record type: strategy, anti-strategy, technique-card, ...")
@click.option("--level", help="operator, cross-operator or generic.")
@click.option("--status", help="active, superseded or deprecated (default: not retracted).")
@click.option("--tier", type=click.Choice(TIERS), help="Only records of this worth tier.")
@click.option("--symptom", help="A bottleneck or symptom (indexed signals beat text mentions).")
@click.option(
    "--technique",
    help="A canonical technique (num-warps, num-warps-up, eviction-policy-evict-first); "
    "see --list-techniques.",
)
@click.option("--strict-arch", is_flag=True, help="Exact architecture only, no neutral records.")
@click.option(
    "--cross-arch",
    is_flag=True,
    help="Also this vendor's other architectures, labelled other-architecture.",
)
@click.option("--any", "any_term", is_flag=True, help="Match any term (default: all terms).")
@click.option("--exclude", multiple=True, help="Record ids to leave out (comma-separated).")
@click.option("--min-importance", type=float, help="Floor on the record's worth score.")
@click.option("--min-gain", type=float, help="Floor on the record's gain (percent).")
@click.option("--min-speedup", type=float, help="Floor on the record's measured speedup (x).")
@click.option("--rank", type=click.Choice(RANK_MODES), default="blend", show_default=True)
@click.option("--weight-importance", type=float, default=1.0, show_default=True)
@click.option("--limit", type=int, default=DEFAULT_LIMIT, show_default=True)
@click.option("--brief", is_flag=True, help="Leave verbatim code out (omissions are named).")
@click.option("--max-bytes", type=int, help="Byte budget of the JSON answer (weakest hits go).")
@click.option("--json", "--emit-json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--coverage", is_flag=True, help="Print how the scoped pool decomposes; no ranking.")
@click.option("--include-retired", is_flag=True, help="Also serve retracted records.")
@click.option("--no-fallback", "fallback", is_flag=True, default=True, flag_value=False,
              help="No random sample of the pool when nothing matches.")  # fmt: skip
@click.option("--fallback-ratio", type=float, default=DEFAULT_FALLBACK_RATIO, show_default=True)
@click.option("--seed", type=int, help="Seed of the fallback sample.")
@click.option("--explain", is_flag=True, help="Also print each hit's path (text output).")
@_list_options
@click.option("--like", help="Substring filter for --list-*.")
def command(
    terms: tuple[str, ...],
    store: Store,
    type_: str | None,
    exclude: tuple[str, ...],
    as_json: bool,
    coverage: bool,
    listing: str | None,
    like: str | None,
    explain: bool,
    **opts: Any,  # the filters, each by Request's own field name (Request checks them)
) -> None:
    """Ask the store what it knows: scoped, ranked strategies, anti-strategies and cards.

    TERMS are free text matched against each record's retrieval terms (all of
    them, or any with --any). The scope filters fail closed: a value the store
    does not hold is an error naming the near misses (exit 2), never an empty
    answer. Only the served projection leaves the store (id, type, applies_to,
    match, payload), never worth or evidence. With --json the answer is one
    object: query (the scope as resolved), result (kind, counts, diagnosis) and
    records in rank order.
    """
    if listing:
        found = answer.vocabulary(store, listing, like)
        for value in found["values"]:
            click.echo(value)
        if found["free_text"]:
            n, total = len(found["free_text"]), len(found["values"])
            click.echo(f"note: {n} of {total} values are free text: match them as terms", err=True)
        return
    ids = frozenset(i.strip() for item in exclude for i in item.split(",") if i.strip())
    # query.scope still reads Optional leniently (Request.type: str): this ignore goes
    # unused, and mypy says so, once it turns strict_optional on.
    request = Request(terms=tuple(terms), type=type_, exclude=ids, **opts)  # type: ignore[arg-type]
    if coverage:
        echo_json(answer.coverage(store, request))
        return
    found = answer.query(store, request)
    if as_json:
        click.echo(budget.dumps(found))
        return
    result = found["result"]
    click.echo(f"{result['kind']}: {result['served']} served of {result['scoped_pool']} in scope "
               f"({result['store_total']} in the store)", err=True)  # fmt: skip
    for line in serve.text_lines(found, explain):
        click.echo(line)
