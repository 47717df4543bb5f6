import click

from gitkb.server.control import CI_FILES
from gitkb.store import Store


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--bare", is_flag=True, help="Create a bare store (no work tree), e.g. for a server.")
@click.option("--name", help="The store's name (default: the directory's name).")
@click.option(
    "--ci",
    "forge",
    type=click.Choice(tuple(CI_FILES)),
    help="Also commit the forge's workflow that runs `git kb check` (as `git kb ci FORGE`).",
)
def command(directory: str, bare: bool, name: str | None, forge: str | None) -> None:
    """Create a new gitkb store in DIRECTORY."""
    store = Store.init(directory, bare=bare, name=name)
    if forge:
        from gitkb.server.ci import write_ci

        write_ci(store, forge)
    click.echo(
        f"initialized {'bare ' if bare else ''}gitkb store in {directory} ({store.tip[:12]})"
        + (f", with {CI_FILES[forge]}" if forge else "")
    )
