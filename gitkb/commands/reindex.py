import click

from gitkb.commands import echo_json, store_option
from gitkb.store import Store


@click.command("reindex")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@store_option
def command(as_json: bool, store: Store) -> None:
    """Rebuild the index cache from the records; commits nothing.

    The index lives under the git directory (store format 2). In a store with a
    work tree this also writes the git-ignored records/index.json that tools
    reading the folder expect.
    """
    result = store.reindex()
    if as_json:
        echo_json(result)
        return
    click.echo(f"indexed {result['records']} records")
    if result["work_tree_index"]:
        click.echo(f"wrote {result['work_tree_index']}")
    unindexed = result["unindexed"]
    if unindexed:
        more = f" and {len(unindexed) - 5} more" if len(unindexed) > 5 else ""
        click.echo(f"not indexed (run git kb validate): {', '.join(unindexed[:5])}{more}",
                   err=True)  # fmt: skip
