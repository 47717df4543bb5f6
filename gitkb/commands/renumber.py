import click

from gitkb.commands import echo_json, writer_store_option
from gitkb.store import Store


@click.command("renumber")
@click.argument("record_id")
@click.option(
    "--upstream",
    help="The server's main as this clone knows it (default: refs/remotes/origin/main).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what moved as JSON.")
@writer_store_option
def command(record_id: str, upstream: str | None, as_json: bool, store: Store) -> None:
    """Give this clone's admission of RECORD_ID a fresh id.

    When the server refuses a push because another clone admitted the same id, run this
    in your clone (after git fetch): the commits not pushed yet are rewritten so your
    record takes the next free id; then push again.
    """
    from gitkb.store.renumber import renumber

    report = renumber(store, record_id, upstream)
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"{report['record']} -> {report['new_id']} in {report['rewritten']} unpushed commits "
        f"[{report['new_tip'][:12]}]; push again"
    )
