import click

from gitkb.commands import echo_json
from gitkb.testing.demo import run_demo


@click.command("demo")
@click.argument("folder", required=False, default="gitkb-demo", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Also print a machine summary as JSON.")
def command(folder: str, as_json: bool) -> None:
    """Run the whole loop on the bundled CPU example in FOLDER (new or empty; default
    ./gitkb-demo): optimize, mine, push, a refused tampered push, warm start."""
    summary = run_demo(folder, say=lambda line: click.echo(line, err=as_json))
    if as_json:
        echo_json(summary)
