import click


@click.group("hook")
def command() -> None:
    """Entry points that git hooks call; you rarely run these by hand."""


@command.command("pre-commit")
@click.argument("files", nargs=-1)
def pre_commit(files: tuple[str, ...]) -> None:
    """Run the record-level gates on FILES (the staged record files)."""
    from gitkb.hooks import pre_commit as run

    problems = run(list(files))
    for line in problems:
        click.echo(f"gitkb: {line}", err=True)
    raise SystemExit(1 if problems else 0)
