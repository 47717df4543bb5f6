import click

from gitkb.commands import echo_json, input_name, read_input, writer_store_option
from gitkb.errors import GitkbError
from gitkb.store import Store
from gitkb.store.admission import ACTIONS, AUTO
from gitkb.store.request import AdmitRequest
from gitkb.store.writer import Admission


def _report(admission: Admission, as_json: bool) -> None:
    if as_json:
        echo_json(admission.as_json())
    elif admission.commit:
        extra = f" ({admission.note})" if admission.note else ""
        click.echo(
            f"{admission.action} {admission.record_id} -> {admission.path} "
            f"[{admission.commit[:12]}]{extra}"
        )
    else:
        click.echo(f"{admission.action} {admission.record_id}: {admission.note}")


@click.command("admit")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option(
    "--action",
    type=click.Choice([*ACTIONS, AUTO]),
    default="insert",
    show_default=True,
    help="insert a new record, confirm an existing one, queue a conflict for a human, or "
    "auto: let the store decide (a reproduction confirms, a contradiction conflicts).",
)
@click.option("--target", help="The existing record a confirm or conflict is about.")
@click.option("--trace", help="The trace label the record comes from (KB-Trace trailer).")
@click.option("--trace-commit", help="The trace commit the record cites (KB-Trace-Commit trailer).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per admission.")
@writer_store_option
def command(
    files: tuple[str, ...],
    action: str,
    target: str | None,
    trace: str | None,
    trace_commit: str | None,
    as_json: bool,
    store: Store,
) -> None:
    """Admit record FILES into the store, in order, one commit each ('-' reads stdin).

    The record-level gates run before anything is written. A refused record
    stops the run: the files before it are admitted, it and the rest are not.
    """
    requests = [
        AdmitRequest(read_input(path), action, target, input_name(path), trace, trace_commit)
        for path in files
    ]
    try:
        admissions = store.admit_many(requests)
    except GitkbError as exc:
        for admission in exc.admitted:
            _report(admission, as_json)
        raise
    for admission in admissions:
        _report(admission, as_json)
