import click

from gitkb.store import Store


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--bare", is_flag=True, help="Create a bare store (no work tree), e.g. for a server.")
@click.option("--name", help="The store's name (default: the directory's name).")
def command(directory: str, bare: bool, name: str | None) -> None:
    """Create a new gitkb store in DIRECTORY."""
    store = Store.init(directory, bare=bare, name=name)
    click.echo(
        f"initialized {'bare ' if bare else ''}gitkb store in {directory} ({store.tip[:12]})"
    )
