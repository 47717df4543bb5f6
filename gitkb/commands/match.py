import click

from gitkb import record
from gitkb.commands import echo_json, input_name, read_input, store_option
from gitkb.store import Store


@click.command("match")
@click.argument("file", type=click.Path(allow_dash=True))
@store_option
def command(file: str, store: Store) -> None:
    """Print every same-scope candidate for the record in FILE, as JSON.

    Scope is vendor, arch, dsl (`any` matches both ways) and operator family;
    exact episode_key matches are listed apart. It decides nothing.
    """
    incoming = record.parse(read_input(file), input_name(file))
    _, findings = store.check_record(incoming, record.path_for(incoming))
    if findings:
        echo_json(
            {
                "status": "gate_error",
                "errors": [f.line() for f in findings[:10]],
                "incoming": None,
                "candidates": [],
            }
        )
        raise SystemExit(1)
    echo_json(store.match(incoming))
