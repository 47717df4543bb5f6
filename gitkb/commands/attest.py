import click

from gitkb.commands import echo_json, writer_store_option
from gitkb.store import Store
from gitkb.warmstart.attest import OUTCOMES, attested, parse_evidence


@click.command("attest")
@click.argument("record_id")
@click.option(
    "--outcome",
    required=True,
    type=click.Choice(OUTCOMES),
    help="What happened when the candidate was tried on hardware.",
)
@click.option("--by", help="Who attests (default: the committer identity).")
@click.option("--evidence", multiple=True, metavar="K=V", help="Evidence to keep (repeatable).")
@writer_store_option
def command(
    record_id: str, outcome: str, by: str | None, evidence: tuple[str, ...], store: Store
) -> None:
    """Append one outcome for RECORD_ID to ledger/<id>.jsonl: one attest commit.

    Moves no ranking scalar; prints the ledger's counts and retire hint as JSON.
    """
    echo_json(attested(store, record_id, outcome, by, parse_evidence(evidence)))
