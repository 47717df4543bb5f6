import os

import click

from gitkb.commands import store_option
from gitkb.errors import writing
from gitkb.server import check_formats
from gitkb.server.check import check_range, parse_range
from gitkb.server.check_formats import FORMATS
from gitkb.store import Store


@click.command("check")
@click.argument("revision_range", metavar="BASE..HEAD")
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
    help="text (the hook's lines), json, github (annotations and a job summary), gitlab "
    "(a Code Quality report) or sarif (SARIF 2.1.0).",
)  # fmt: skip
@store_option
def command(revision_range: str, fmt: str, store: Store) -> None:
    """The verdict the server would give a push of HEAD onto BASE.

    Runs the server's own checks (history rules, access, gates, trace refs) over the
    commits of BASE..HEAD, with the trace refs this repository holds. Exits 0 when the
    range is clean, 1 when the server would refuse it, 2 when it cites trace refs or
    trace commits this repository lacks (each named). With --format github and
    GITHUB_STEP_SUMMARY set, a Markdown summary is appended to that file.
    """
    base, head = parse_range(store.repo, revision_range)
    verdict = check_range(store.repo, base, head)
    click.echo(check_formats.render(verdict, fmt))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "github" and summary:
        with writing(summary), open(summary, "a", encoding="utf-8") as fh:
            fh.write(check_formats.github_summary(verdict))
    raise SystemExit(verdict.exit_code)
