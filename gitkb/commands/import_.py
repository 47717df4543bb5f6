import click

from gitkb.commands import echo_json, writer_store_option
from gitkb.importers import IMPORTERS, import_tree
from gitkb.store import Store


@click.command("import")
@click.argument("kind", type=click.Choice(list(IMPORTERS)))
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@click.option(
    "--dry-run", is_flag=True, help="Print the plan (what would be written); write nothing."
)
@writer_store_option
def command(kind: str, directory: str, as_json: bool, dry_run: bool, store: Store) -> None:
    """Import another tool's records from DIRECTORY.

    gpu-wiki: a records tree (DIRECTORY/records/...) in one commit; records keep
    their paths and bytes. geak: a GEAK kb_artifacts tree
    (<gfx>/<kernel_class>/<slug>/<exp_id>/), as a sync: new entries in one import
    commit, then confirm, attest and retract commits for what GEAK measured,
    attested or retired since; an unchanged tree writes nothing. tlx-knowledge:
    the TLX kernel optimization agent's knowledge (harnesses/<arch>/knowledge.md,
    targets/<kernel>/optimization_guidance.md, <vendor>/<topic>/manifest.json): each
    entry a documented technique card with no numbers, its words as written. Entries that
    cannot become valid records are listed with the reason; symlinks are never
    followed. The gates run on every record first.
    """
    report = import_tree(kind, store, directory, dry_run=dry_run)
    if as_json:
        echo_json(report.as_json())
        return
    if dry_run:
        click.echo(f"plan for {kind} ({len(report.steps)} steps; nothing written):")
        for step in report.steps:
            click.echo(f"  {step['action']} {step['record']}: {step['detail']}")
    else:
        commit = f"[{report.commit[:12]}]" if report.commit else "(nothing new: no commit)"
        click.echo(
            f"imported {report.imported} records from {kind}, "
            f"{len(report.steps) - report.imported} other steps "
            f"({len(report.commits)} commits) {commit}"
        )
    for skipped in report.skipped:
        click.echo(f"  skipped {skipped['entry']}: {skipped['reason']}")
    for note in report.notes:
        click.echo(f"  note {note['entry']}: {note['note']}")
