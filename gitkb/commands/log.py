import click

from gitkb.commands import echo_json, store_option
from gitkb.store import Store


@click.command("log")
@click.argument("record_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the history as JSON.")
@store_option
def command(record_id: str | None, as_json: bool, store: Store) -> None:
    """Show the admission history (newest first), optionally of one record."""
    history = store.log(record_id)
    if as_json:
        echo_json(history)
        return
    for item in history:
        trailers = item["trailers"]
        extra = "".join(
            f" {k.removeprefix('KB-').lower()}={v}"
            for k, v in trailers.items()
            if k in ("KB-Trace", "KB-Gates", "KB-Target", "KB-Confirmed-By", "KB-Records")
        )
        click.echo(
            f"{item['commit'][:12]} {item['time']} {item['action']:8} "
            f"{trailers.get('KB-Record', '')}{extra}"
        )
