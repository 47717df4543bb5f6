import click

from gitkb.commands import open_store, store_option


@click.command("import")
@click.argument("kind", type=click.Choice(["gpu-wiki"]))
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@store_option
def command(kind: str, directory: str, store_path: str) -> None:
    """Import a GPU-wiki records tree (DIRECTORY/records/...) in one commit.

    Records keep their paths and bytes; the gates run on all of them first.
    """
    admission = open_store(store_path).import_gpu_wiki(directory)
    click.echo(f"imported {admission.record_id} [{admission.commit[:12]}]")
