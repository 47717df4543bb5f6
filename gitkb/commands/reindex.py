import click

from gitkb.commands import open_store, store_option


@click.command("reindex")
@store_option
def command(store_path: str) -> None:
    """Rebuild records/index.json from the records; commits only when it changed."""
    admission = open_store(store_path).reindex()
    if admission.commit:
        click.echo(f"reindexed [{admission.commit[:12]}]")
        if admission.note:
            click.echo(admission.note, err=True)
    else:
        click.echo(admission.note)
