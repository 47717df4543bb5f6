import click

from gitkb.commands import store_option


@click.command("export")
@click.argument("kind", type=click.Choice(["gpu-wiki", "tlx-knowledge"]))
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--target",
    "target_file",
    type=click.Path(dir_okay=False),
    help="tlx-knowledge: also write the flat layout's optimization_guidance.md for this "
    "target.json.",
)
@store_option
def command(kind: str, directory: str, target_file: str | None, store) -> None:
    """Write the store into DIRECTORY in another tool's layout: gpu-wiki (records and
    index) or tlx-knowledge (the TLX agent's <vendor>/<topic>/manifest.json and Markdown)."""
    if kind == "gpu-wiki":
        from gitkb.importers.gpu_wiki import export_tree

        count = export_tree(store, directory)
        click.echo(f"exported {count} records to {directory}")
        return
    from gitkb.importers import tlx_knowledge

    target = tlx_knowledge.read_target(target_file) if target_file else None
    count = tlx_knowledge.export_tree(store, directory, target)
    click.echo(f"exported {count} topics to {directory}")
