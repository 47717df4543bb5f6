import typing

import click


@click.command("help")
@click.argument("verb", required=False)
@click.pass_context
def command(ctx: click.Context, verb: str | None) -> None:
    """Show help for VERB (or the list of verbs)."""
    root = ctx.find_root()
    group = typing.cast(click.Group, root.command)
    if not verb:
        click.echo(group.get_help(root))
        return
    sub = group.get_command(ctx, verb)
    if sub is None:
        raise click.UsageError(f"no such verb: {verb}")
    with click.Context(sub, info_name=verb, parent=root) as sub_ctx:
        click.echo(sub.get_help(sub_ctx))
