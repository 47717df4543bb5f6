import click

from gitkb.errors import GitkbError


@click.group("hooks")
def command() -> None:
    """Install gitkb's gate hooks."""


@command.command("install")
@click.argument("repo", default=".", type=click.Path(file_okay=False))
@click.option("--server", is_flag=True, help="Install the pre-receive hook into a bare REPO.")
@click.option("--gitea", is_flag=True, help="Server hook in Gitea's layout (hooks/pre-receive.d/).")
@click.option("--gitlab", is_flag=True, help="Server hook in GitLab's layout (custom_hooks/).")
@click.option("--force", is_flag=True, help="Replace an existing different hook.")
@click.option(
    "--admins",
    "admins",
    type=click.Path(exists=True, dir_okay=False),
    help="With --server: an allowed-signers file of the admins who may turn access on "
    "(kept in the server repository's config, not in history).",
)
def install(
    repo: str, server: bool, gitea: bool, gitlab: bool, force: bool, admins: str | None
) -> None:
    """Install the hooks that run the gates.

    Without --server: the store's pre-commit and commit-msg hooks, through the
    pre-commit framework (REPO is a store with a work tree). With --server,
    --gitea or --gitlab: the pre-receive hook that checks every push, into the
    bare repository REPO.
    """
    from gitkb.hooks import install as hook_install

    if gitea and gitlab:
        raise GitkbError("choose one of --gitea and --gitlab", 2)
    if admins and not (server or gitea or gitlab):
        raise GitkbError("--admins is the server's anchor: pass it with --server", 2)
    if server or gitea or gitlab:
        layout = "gitea" if gitea else "gitlab" if gitlab else "git"
        target = hook_install.install_server(repo, layout, force=force, admins=admins)
        click.echo(f"installed the pre-receive hook: {target}")
    else:
        report = hook_install.install_local(repo)
        click.echo(report or f"installed the local hooks in {repo}")
