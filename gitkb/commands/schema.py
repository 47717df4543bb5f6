import click

from gitkb.schema import profile as schema


@click.command("schema")
@click.option(
    "--show", "mode", flag_value="show", help="Print the opt-trace-1.0 patches and reasons."
)
@click.option(
    "--check", "mode", flag_value="check", help="Fail when the generated profile is stale."
)
@click.option("--write", "mode", flag_value="write", help="Regenerate the opt-trace-1.0 profile.")
def command(mode: str | None) -> None:
    """The opt-trace-1.0 profile: clean-1.3 narrowed by a declared patch list."""
    if mode == "check":
        differences = schema.profile_differences()
        if differences:
            for line in differences:
                click.echo(f"stale: {line}", err=True)
            raise SystemExit(1)
        click.echo("opt-trace-1.0 profile is current")
    elif mode == "write":
        click.echo(f"wrote {schema.write_profile()}")
    else:
        for line in schema.describe_patches():
            click.echo(line)
