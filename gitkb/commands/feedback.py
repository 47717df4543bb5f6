import click

from gitkb.commands import echo_json, writer_store_option
from gitkb.query.feedback import OUTCOMES, feedback
from gitkb.store import Store


@click.command("feedback")
@click.argument("record_id")
@click.option("--outcome", required=True, type=click.Choice(OUTCOMES), help="What using it did.")
@click.option("--trace", help="The trace (label) whose version used the record.")
@click.option("--trace-commit", help="That version's commit in the trace.")
@click.option("--by", help="Who reports (default: the git identity).")
@writer_store_option
def command(
    record_id: str,
    outcome: str,
    trace: str | None,
    trace_commit: str | None,
    by: str | None,
    store: Store,
) -> None:
    """Report what using RECORD_ID did: one line appended to its feedback log (one commit).

    The log (feedback/<id>.jsonl) is append-only and union-merged; an event is
    idempotent per key (the trace version, else the reporter), and ranking folds
    the events into the counters it reads. Prints the admission as JSON.
    """
    admission = feedback(store, record_id, outcome, trace, trace_commit, by)
    echo_json(admission.as_json())
