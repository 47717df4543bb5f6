import click

from gitkb.commands import writer_store_option
from gitkb.store import Store


@click.command("upgrade")
@writer_store_option
def command(store: Store) -> None:
    """Upgrade a store to format 2: one `kb upgrade` commit takes records/index.json out
    of history (the index becomes a cache under the git directory). The first write to
    a format-1 store does the same on its own."""
    admission = store.upgrade()
    if admission.commit:
        click.echo(f"upgraded to store format 2 [{admission.commit[:12]}]")
    else:
        click.echo(admission.note)
