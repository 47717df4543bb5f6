import sys

import click

from gitkb.hooks import local

# A refused push shows this many problem lines, then a count of the rest.
SHOWN_PROBLEMS = 50


@click.group("hook")
def command() -> None:
    """Entry points that git hooks call; you rarely run these by hand."""


def _report(problems: list[str]) -> None:
    for line in problems[:SHOWN_PROBLEMS]:
        click.echo(f"gitkb: {line}", err=True)
    if len(problems) > SHOWN_PROBLEMS:
        click.echo(f"gitkb: ... and {len(problems) - SHOWN_PROBLEMS} more problems", err=True)
    raise SystemExit(1 if problems else 0)


@command.command("pre-commit")
@click.argument("files", nargs=-1, type=click.Path())
def pre_commit(files: tuple[str, ...]) -> None:
    """Run the record-level gates on FILES (the staged record files)."""
    _report(local.pre_commit(list(files)))


@command.command("commit-msg")
@click.argument("message_file", type=click.Path(dir_okay=False))
def commit_msg(message_file: str) -> None:
    """Refuse an admission message (`kb <action> <id>`) whose trailers say otherwise."""
    _report(local.commit_msg(message_file))


@command.command("pre-receive")
def pre_receive() -> None:
    """Check a push: reads `old new ref` lines on stdin, as git's pre-receive hook does.

    Exits 1 and prints `gitkb: <ref> <commit>: <record-id>: <gate>: <what>` lines
    when the push must be refused.
    """
    _report(local.pre_receive(sys.stdin.read().splitlines()))


@command.command("reference-transaction")
@click.argument("state")
def reference_transaction(state: str) -> None:
    """Check a ref transaction: `old new ref` lines on stdin, git's reference-transaction
    hook. In the `prepared` state, refuses a move of main citing a trace commit that no
    trace ref reaches; other states pass."""
    _report(local.reference_transaction(state, sys.stdin.read().splitlines()))
