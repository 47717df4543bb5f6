import click

from gitkb.commands import open_store, store_option


@click.command("export")
@click.argument("kind", type=click.Choice(["gpu-wiki"]))
@click.argument("directory", type=click.Path(file_okay=False))
@store_option
def command(kind: str, directory: str, store_path: str) -> None:
    """Write the store's records and index into DIRECTORY in the GPU-wiki layout."""
    from gitkb.importers.gpu_wiki import export_tree

    count = export_tree(open_store(store_path), directory)
    click.echo(f"exported {count} records to {directory}")
