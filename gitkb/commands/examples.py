import click

from gitkb.util.resources import data_dir


@click.command("examples")
def command() -> None:
    """Print the paths of the example records that ship with gitkb (one per line)."""
    for path in sorted((data_dir("templates") / "examples" / "records").rglob("*.json")):
        click.echo(str(path))
