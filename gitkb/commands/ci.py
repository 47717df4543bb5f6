import click

from gitkb.commands import echo_json, writer_store_option
from gitkb.server.ci import write_ci
from gitkb.server.control import CI_FILES
from gitkb.store import Store


@click.command("ci")
@click.argument("forge", type=click.Choice(tuple(CI_FILES)))
@writer_store_option
def command(forge: str, store: Store) -> None:
    """Commit the workflow that runs `git kb check` on every pull (github) or merge
    (gitlab) request: .github/workflows/gitkb.yml or .gitlab-ci.yml, pinned to this
    gitkb. One `kb config` commit; nothing when the file is already that."""
    echo_json(write_ci(store, forge).as_json())
