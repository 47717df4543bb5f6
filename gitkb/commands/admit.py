import click

from gitkb.commands import echo_json, open_store, read_input, store_option


@click.command("admit")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--action",
    type=click.Choice(["insert", "confirm", "conflict"]),
    default="insert",
    show_default=True,
    help="insert a new record, confirm an existing one, or queue a conflict for a human.",
)
@click.option("--target", help="The existing record a confirm or conflict is about.")
@click.option("--trace", help="The trace label the record comes from (KB-Trace trailer).")
@click.option("--trace-commit", help="The trace commit the record cites (KB-Trace-Commit trailer).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per admission.")
@store_option
def command(files, action, target, trace, trace_commit, as_json, store_path) -> None:
    """Admit record FILES into the store, one commit each ('-' reads stdin).

    The record-level gates run before anything is written; a refused record
    leaves the store unchanged.
    """
    store = open_store(store_path)
    for path in files:
        admission = store.admit(
            read_input(path),
            action,
            target=target,
            source=path,
            trace=trace,
            trace_commit=trace_commit,
        )
        if as_json:
            echo_json(admission.as_json())
        elif admission.commit:
            extra = f" ({admission.note})" if admission.note else ""
            click.echo(f"{admission.action} {admission.record_id} -> {admission.path} [{admission.commit[:12]}]{extra}")
        else:
            click.echo(f"{admission.action} {admission.record_id}: {admission.note}")
