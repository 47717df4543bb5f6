import click

from gitkb.commands import echo_json, store_option
from gitkb.importers import IMPORTERS


@click.command("import")
@click.argument("kind", type=click.Choice(list(IMPORTERS)))
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@store_option
def command(kind: str, directory: str, as_json: bool, store) -> None:
    """Import another tool's records from DIRECTORY in one commit.

    gpu-wiki: a records tree (DIRECTORY/records/...); records keep their paths
    and bytes. geak: a GEAK kb_artifacts tree (<gfx>/<kernel_class>/<slug>/<exp_id>/);
    entries that cannot become valid records are listed with the reason.
    The gates run on every record first.
    """
    from gitkb.importers import import_tree

    report = import_tree(kind, store, directory)
    if as_json:
        echo_json(report.as_json())
        return
    commit = f"[{report.commit[:12]}]" if report.commit else "(nothing new: no commit)"
    click.echo(
        f"imported {report.imported} records from {kind}, "
        f"{len(report.reproductions)} reproductions {commit}"
    )
    for skipped in report.skipped:
        click.echo(f"  skipped {skipped['entry']}: {skipped['reason']}")
    for note in report.notes:
        click.echo(f"  note {note['entry']}: {note['note']}")
