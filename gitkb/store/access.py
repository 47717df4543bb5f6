"""``git kb access``: the store's signers (``access/allowed_signers``) and roles
(``gitkb.toml [access]``), each change one signed ``kb access`` commit through the
write path. The server judges such a commit by the access files of its parent
(``gitkb.server.access``), so only an admin's lands."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import tomli_w

from gitkb import layout
from gitkb.access import policy, signers
from gitkb.access.policy import Policy
from gitkb.access.signers import SIGNERS_PATH, AllowedSigner, SignersError
from gitkb.errors import GitkbError
from gitkb.store.writer import Admission, Change

if TYPE_CHECKING:
    from gitkb.store.store import Store
    from gitkb.store.view import StoreView


@dataclass(frozen=True, slots=True)
class Access:
    """A store's access files as they stand: its policy and its signers (none: off)."""

    enabled: bool
    policy: Policy
    signers: tuple[AllowedSigner, ...]

    def as_json(self) -> dict[str, bool | list[dict[str, str]]]:
        return {
            "enabled": self.enabled,
            "require_signed": self.policy.require_signed,
            "signers": [
                {
                    "principal": s.principal,
                    "role": self.policy.role_of(s.principal),
                    "key_type": s.key_type,
                    "fingerprint": s.fingerprint,
                    "valid_after": s.valid_after,
                    "valid_before": s.valid_before,
                }
                for s in self.signers
            ],
        }


def read(store: Store, commit: str | None = None) -> Access:
    """The access files at ``commit`` (default: main); a file gitkb did not write is an
    error naming its line."""
    tip = commit or store.tip
    raw = store.repo.read(tip, SIGNERS_PATH)
    if raw is None:
        return Access(False, policy.policy_of(store.config(tip)), ())
    try:
        listed = tuple(signers.parse(raw))
    except SignersError as exc:
        raise GitkbError(f"{store.location}: {SIGNERS_PATH} {exc.message}") from None
    return Access(True, policy.policy_of(store.config(tip)), listed)


def key_of(text: str, where: str) -> tuple[str, str]:
    """(key type, key) of a public key file's text (``where``: how to name it)."""
    try:
        return signers.public_key(text)
    except SignersError as exc:
        raise GitkbError(f"{where}: {exc.message}", 2) from None


def init(store: Store, admin: str, key: tuple[str, str]) -> Admission:
    """Turn access on: ``admin`` the one signer and admin, signatures required."""
    _principal(admin)
    if read(store).enabled:
        raise GitkbError(f"{store.location}: access is on already ({SIGNERS_PATH} exists)")
    signer = store.repo.signer()
    if signer is None:
        raise GitkbError(
            f"{store.location}: turning access on is one signed commit, and git is not set "
            f"to sign: {policy.SIGNING_SETTINGS}"
        )
    first = AllowedSigner(admin, *key)
    signs_with = signer.fingerprint()
    if signs_with != first.fingerprint:
        raise GitkbError(
            f"{store.location}: git signs with {signs_with} (user.signingkey), not "
            f"{admin}'s key {first.fingerprint}: the commit turning access on would be refused; "
            f"git config user.signingkey <{admin}'s key file>"
        )
    rules = Policy(require_signed=True, admins=(admin,))
    return _write(store, admin, [first], rules, f"Access on: {admin} the first admin.")


def add(
    store: Store, principal: str, key: tuple[str, str], role: str = "contributor",
    force: bool = False,
) -> Admission:  # fmt: skip
    """Let ``principal`` sign with ``key`` (another key of a principal: a rotation's
    first step), as ``role``; a key it holds already: its role changes. ``force``: even
    where that leaves no admin (see ``_keeps_an_admin``)."""
    _principal(principal)
    current = _enabled(store)
    new = AllowedSigner(principal, *key)
    live = [s for s in current.signers if s.key == new.key and not s.valid_before]
    if any(s.principal != principal for s in live):
        raise GitkbError(f"{store.location}: another signer holds that key ({new.fingerprint})")
    rules = current.policy
    if live and rules.role_of(principal) == role:
        raise GitkbError(f"{store.location}: {principal} signs with that key as {role} already")
    curators = set(rules.curators) - {principal} | ({principal} if role == "curator" else set())
    admins = set(rules.admins) - {principal} | ({principal} if role == "admin" else set())
    rules = Policy(rules.require_signed, tuple(sorted(curators)), tuple(sorted(admins)))
    listed = [*current.signers, *([] if live else [new])]
    _keeps_an_admin(store, current, listed, rules, force)
    return _write(store, principal, listed, rules, f"{principal} signs as {role}.")


def revoke(
    store: Store, principal: str, at: dt.datetime, key: tuple[str, str] | None = None,
    force: bool = False,
) -> Admission:  # fmt: skip
    """End ``principal``'s keys (or that one ``key``) at ``at``: commits they signed
    before stay valid. ``force``: even where that leaves no admin."""
    current = _enabled(store)
    stamp = signers.utc_stamp(at)
    hit = [s for s in current.signers if s.principal == principal and (not key or s.key == key[1])]
    if not hit:
        which = "that key of " if key else ""
        raise GitkbError(f"{store.location}: {SIGNERS_PATH} lists no {which}{principal}", 2)
    listed = [s.revoked(stamp) if s in hit else s for s in current.signers]
    _keeps_an_admin(store, current, listed, current.policy, force)
    return _write(store, principal, listed, current.policy, f"{principal} revoked at {stamp}.")


def _admins_for_good(listed: Iterable[AllowedSigner], rules: Policy) -> set[str]:
    """The admins holding a key with no end (no ``valid-before``)."""
    return {
        s.principal for s in listed if not s.valid_before and rules.role_of(s.principal) == "admin"
    }


def _keeps_an_admin(
    store: Store, current: Access, listed: list[AllowedSigner], rules: Policy, force: bool
) -> None:
    """Refuse a change that leaves no admin with a key that does not end, where there was
    one: every later access change needs an admin's signature, and history is append-only,
    so the store's access could never change again. ``force`` makes it all the same."""
    before = _admins_for_good(current.signers, current.policy)
    if force or not before or _admins_for_good(listed, rules):
        return
    raise GitkbError(
        f"{store.location}: this leaves no admin with a key that does not end (now: "
        f"{', '.join(sorted(before))}), and every access change needs one, so access could "
        "never change again; pass --force to do it anyway"
    )


def require_admin_signer(store: Store) -> None:
    """Refuse, before ``add`` or ``revoke`` writes, an access change git would sign with a
    key no admin holds now: the server and ``validate --history`` judge it by the rules
    at main, and would refuse it. (``add`` and ``revoke`` themselves write what they are
    asked, so a test can make such a commit and see the server refuse it.)"""
    current = _enabled(store)
    signer = store.repo.signer()
    if signer is None:
        raise GitkbError(
            f"{store.location}: an access change is one commit an admin signs, and git is "
            f"not set to sign: {policy.SIGNING_SETTINGS}"
        )
    fingerprint = signer.fingerprint()
    now = signers.utc_stamp(dt.datetime.now(dt.UTC))
    holders = [
        s.principal
        for s in current.signers
        if s.fingerprint == fingerprint
        and s.valid_after <= now
        and (not s.valid_before or now < s.valid_before)
    ]
    if any(current.policy.role_of(p) == "admin" for p in holders):
        return
    who = f"{holders[0]}, a {current.policy.role_of(holders[0])}" if holders else "no signer"
    raise GitkbError(
        f"{store.location}: git signs with {fingerprint} (user.signingkey), the key of "
        f"{who} here: an access change needs an admin's signature, and would be refused"
    )


def _principal(name: str) -> None:
    if not policy.PRINCIPAL.fullmatch(name):
        raise GitkbError(
            f"{name!r} is no principal gitkb writes (letters, digits and ._+@-, no spaces)", 2
        )


def _enabled(store: Store) -> Access:
    current = read(store)
    if not current.enabled:
        raise GitkbError(f"{store.location}: access is off; git kb access init turns it on")
    return current


def _write(
    store: Store, principal: str, listed: list[AllowedSigner], rules: Policy, body: str
) -> Admission:
    def build(view: StoreView) -> Change:
        config = store.config(view.tip)
        config["access"] = rules.table()
        edits: dict[str, bytes | None] = {
            SIGNERS_PATH: signers.render(listed),
            layout.CONFIG_PATH: tomli_w.dumps(config).encode(),
        }
        return Change("access", principal, edits, SIGNERS_PATH, body, note=body)

    return store.commit([build])[0]
