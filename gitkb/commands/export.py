import click

from gitkb.commands import echo_json, open_store, store_option


@click.command("export")
@click.argument("kind", type=click.Choice(["gpu-wiki", "geak"]))
@click.argument("directory", type=click.Path(file_okay=False))
@store_option
def command(kind: str, directory: str, store_path: str) -> None:
    """Write the store's records into DIRECTORY: gpu-wiki, the records and index in the
    GPU-wiki layout; geak, a GEAK kb_artifacts tree (DIRECTORY/kb_artifacts/<gfx>/
    <kernel_class>/<slug>/<exp_id>/) that GEAK's own resolve reads (JSON report)."""
    if kind == "geak":
        from gitkb.importers.geak.export import export_tree as export_geak

        echo_json(export_geak(open_store(store_path), directory))
        return
    from gitkb.importers.gpu_wiki import export_tree

    count = export_tree(open_store(store_path), directory)
    click.echo(f"exported {count} records to {directory}")
