"""``gitkb.toml [access]``: whether commits must be signed, and which signers are
curators and admins (every other allowed signer is a contributor)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitkb.errors import GitkbError

if TYPE_CHECKING:
    from gitkb.vcs.signing import Signer

ROLES = ("contributor", "curator", "admin")
ACCESS_KEYS = ("require_signed", "curators", "admins")
# A principal as gitkb writes one: an email-like name, no spaces, commas or quotes.
# What a writer sets so that git signs its commits.
SIGNING_SETTINGS = (
    "git config commit.gpgsign true; git config gpg.format ssh; "
    "git config user.signingkey <public key file>"
)
PRINCIPAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,127}")


@dataclass(frozen=True, slots=True)
class Policy:
    """The ``[access]`` table of one ``gitkb.toml``."""

    require_signed: bool = False
    curators: tuple[str, ...] = ()
    admins: tuple[str, ...] = ()

    def role_of(self, principal: str) -> str:
        if principal in self.admins:
            return "admin"
        return "curator" if principal in self.curators else "contributor"

    def table(self) -> dict[str, bool | list[str]]:
        """The table as gitkb writes it."""
        return {
            "require_signed": self.require_signed,
            "curators": sorted(self.curators),
            "admins": sorted(self.admins),
        }


def at_least(role: str, needed: str) -> bool:
    return ROLES.index(role) >= ROLES.index(needed)


def policy_of(config: dict) -> Policy:
    """The policy of a parsed ``gitkb.toml`` (none set: no table, or one that does not
    parse; the history rules refuse such a table where a push brings it)."""
    table = config.get("access")
    if not isinstance(table, dict) or table_problem(table):
        return Policy()
    return Policy(table["require_signed"], tuple(table["curators"]), tuple(table["admins"]))


def table_problem(table: object) -> str | None:
    """What is wrong with an ``[access]`` table, against the one gitkb writes."""
    if not isinstance(table, dict) or sorted(table) != sorted(ACCESS_KEYS):
        return f"[access] holds exactly {', '.join(ACCESS_KEYS)}"
    if not isinstance(table["require_signed"], bool):
        return "[access] require_signed is true or false"
    for key in ("curators", "admins"):
        names = table[key]
        if not isinstance(names, list) or not all(
            isinstance(n, str) and PRINCIPAL.fullmatch(n) for n in names
        ):
            return f"[access] {key} is a list of principals"
        if names != sorted(set(names)):
            return f"[access] {key} is sorted, each principal once"
    return None


def require_signer(policy: Policy, signer: Signer | None, where: str) -> None:
    """Refuse, before any work, a writer that would write unsigned commits into a store
    that requires signatures."""
    if policy.require_signed and signer is None:
        raise GitkbError(
            f"{where}: this store requires signed commits ([access] require_signed) and "
            f"git is not set to sign them: {SIGNING_SETTINGS}"
        )
