import click

from gitkb.commands import echo_json, store_option
from gitkb.store import Store


@click.command("list")
@click.option("--type", "type_", help="Record type, e.g. strategy, anti-strategy.")
@click.option("--vendor", help="nvidia, amd or generic.")
@click.option("--arch", help="hopper, blackwell, cdna3, ...")
@click.option("--dsl", help="triton, cuda, gluon, ...")
@click.option("--operator", help="Operator family.")
@click.option("--json", "as_json", is_flag=True, help="Print the index entries as JSON.")
@store_option
def command(
    type_: str | None,
    vendor: str | None,
    arch: str | None,
    dsl: str | None,
    operator: str | None,
    as_json: bool,
    store: Store,
) -> None:
    """List the store's records (read from the index)."""
    entries = store.list(type=type_, vendor=vendor, arch=arch, dsl=dsl, operator=operator)
    if as_json:
        echo_json(entries)
        return
    for entry in entries:
        score = entry.get("worth_score")
        click.echo(f"{entry['id']}  {entry.get('type')}  {entry.get('tier')}  {score}")
    click.echo(f"{len(entries)} record{'s' if len(entries) != 1 else ''}", err=True)
