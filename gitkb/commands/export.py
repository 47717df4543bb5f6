import click

from gitkb.commands import echo_json, store_option
from gitkb.importers import tlx_knowledge
from gitkb.importers.geak.export import export_tree as export_geak
from gitkb.store import Store


@click.command("export")
@click.argument("kind", type=click.Choice(["gpu-wiki", "tlx-knowledge", "geak"]))
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--target",
    "target_file",
    type=click.Path(dir_okay=False),
    help="tlx-knowledge: also write the flat layout's optimization_guidance.md for this "
    "target.json.",
)
@store_option
def command(kind: str, directory: str, target_file: str | None, store: Store) -> None:
    """Write the store into DIRECTORY in another tool's layout: gpu-wiki (records and
    index), tlx-knowledge (the TLX agent's <vendor>/<topic>/manifest.json and Markdown) or
    geak (a GEAK kb_artifacts tree, DIRECTORY/kb_artifacts/<gfx>/<kernel_class>/<slug>/
    <exp_id>/, that GEAK's own resolve reads; a JSON report)."""
    if kind == "geak":
        echo_json(export_geak(store, directory))
        return
    if kind == "gpu-wiki":
        from gitkb.importers.gpu_wiki import export_tree

        count = export_tree(store, directory)
        click.echo(f"exported {count} records to {directory}")
        return

    target = tlx_knowledge.read_target(target_file) if target_file else None
    count = tlx_knowledge.export_tree(store, directory, target)
    click.echo(f"exported {count} topics to {directory}")
