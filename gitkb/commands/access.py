import datetime as dt
from pathlib import Path

import click

from gitkb.commands import echo_json, store_option, writer_store_option
from gitkb.errors import GitkbError
from gitkb.store import Store, access
from gitkb.store.writer import Admission

_ROLE = click.Choice(["contributor", "curator", "admin"])
_KEY = click.Path(exists=True, dir_okay=False, path_type=Path)
_FORCE = click.option(
    "--force", is_flag=True,
    help="Even where this leaves no admin with a key that does not end (access could then "
    "never change again).",
)  # fmt: skip


@click.group("access")
def command() -> None:
    """Who may sign the store's commits (access/allowed_signers) and their roles
    (gitkb.toml [access]); each change is one signed commit an admin makes."""


def _key(path: Path) -> tuple[str, str]:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GitkbError(f"{path}: cannot read the public key ({exc})", 2) from None
    return access.key_of(text, str(path))


def _report(admission: Admission) -> None:
    click.echo(f"{admission.note or 'access'} [{(admission.commit or '')[:12]}]")


@command.command("init")
@click.option("--admin", "admin", required=True, help="The first admin's principal.")
@click.option("--key", "key", required=True, type=_KEY, help="The admin's public key file.")
@writer_store_option
def init(admin: str, key: Path, store: Store) -> None:
    """Turn access on: ADMIN may sign, as admin, and every commit must be signed."""
    _report(access.init(store, admin, _key(key)))


@command.command("add")
@click.argument("principal")
@click.option("--key", "key", required=True, type=_KEY, help="The signer's public key file.")
@click.option("--role", type=_ROLE, default="contributor", show_default=True)
@_FORCE
@writer_store_option
def add(principal: str, key: Path, role: str, force: bool, store: Store) -> None:
    """Let PRINCIPAL sign with the key, as ROLE (a principal's role is one: this sets it)."""
    access.require_admin_signer(store)
    _report(access.add(store, principal, _key(key), role, force))


@command.command("revoke")
@click.argument("principal")
@click.option("--at", "at", type=click.DateTime(), help="When the keys stop (UTC; default now).")
@click.option("--key", "key", type=_KEY, help="Revoke this key only (a rotation's last step).")
@_FORCE
@writer_store_option
def revoke(
    principal: str, at: dt.datetime | None, key: Path | None, force: bool, store: Store
) -> None:
    """End PRINCIPAL's keys (valid-before): commits signed before stay valid."""
    when = at or dt.datetime.now(dt.UTC)
    access.require_admin_signer(store)
    _report(access.revoke(store, principal, when, _key(key) if key else None, force))


@command.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@store_option
def show(as_json: bool, store: Store) -> None:
    """The signers, their keys, windows and roles."""
    found = access.read(store)
    if as_json:
        echo_json(found.as_json())
        return
    if not found.enabled:
        click.echo("access is off (no access/allowed_signers): signatures optional, no roles")
        return
    click.echo(f"require_signed: {str(found.policy.require_signed).lower()}")
    for s in found.signers:
        window = f" valid-after {s.valid_after}" if s.valid_after else ""
        window += f" valid-before {s.valid_before}" if s.valid_before else ""
        click.echo(f"{s.principal} {found.policy.role_of(s.principal)} {s.fingerprint}{window}")
