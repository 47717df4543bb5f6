import click

from gitkb.commands import store_option


@click.command("export")
@click.argument("kind", type=click.Choice(["gpu-wiki"]))
@click.argument("directory", type=click.Path(file_okay=False))
@store_option
def command(kind: str, directory: str, store) -> None:
    """Write the store's records and index into DIRECTORY in the GPU-wiki layout."""
    from gitkb.importers.gpu_wiki import export_tree

    count = export_tree(store, directory)
    click.echo(f"exported {count} records to {directory}")
