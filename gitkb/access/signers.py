"""``access/allowed_signers``: who may sign a store's commits, in OpenSSH's ALLOWED
SIGNERS format as gitkb renders it. One signer a line: a principal, its options
(``namespaces="git"``, then ``valid-after`` and ``valid-before`` where set, as UTC
times ``YYYYMMDDHHMMSSZ``) and one public key, without its comment; no blank lines, no
comments. A file is accepted only where rendering what it parses to gives its bytes
again, so the file ssh-keygen reads is the one gitkb understood.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import re
import struct
from dataclasses import dataclass, replace

from gitkb.access.policy import PRINCIPAL
from gitkb.errors import GitkbError

SIGNERS_PATH = "access/allowed_signers"
KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
_TIME = re.compile(r"[0-9]{14}Z")
_OPTION = re.compile(r'(namespaces|valid-after|valid-before)="([^"]*)"')
_MAX_KEY_CHARS = 16384


@dataclass(frozen=True, slots=True)
class AllowedSigner:
    """One line: ``principal`` may sign with the key (``key_type``, base64 ``key``)
    between ``valid_after`` and ``valid_before`` (``YYYYMMDDHHMMSSZ``; "" unbounded)."""

    principal: str
    key_type: str
    key: str
    valid_after: str = ""
    valid_before: str = ""

    def line(self) -> str:
        options = ['namespaces="git"']
        options += [f'valid-after="{self.valid_after}"'] if self.valid_after else []
        options += [f'valid-before="{self.valid_before}"'] if self.valid_before else []
        return f"{self.principal} {','.join(options)} {self.key_type} {self.key}"

    @property
    def fingerprint(self) -> str:
        """``SHA256:...``, as ssh-keygen and git name the key."""
        digest = hashlib.sha256(base64.b64decode(self.key)).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")

    def revoked(self, at: str) -> AllowedSigner:
        """This line with ``valid-before`` at ``at``, or earlier where it already ends."""
        ends = min(self.valid_before, at) if self.valid_before else at
        return replace(self, valid_before=ends)


class SignersError(GitkbError):
    """An allowed-signers file, or a public key, that gitkb does not write."""


def render(signers: list[AllowedSigner]) -> bytes:
    return "".join(s.line() + "\n" for s in signers).encode()


def parse(raw: bytes) -> list[AllowedSigner]:
    """The signers of an ``access/allowed_signers``; SignersError (``line N: what``)
    naming the first line whose bytes are not what gitkb writes."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SignersError("not UTF-8") from None
    if text and not text.endswith("\n"):
        raise SignersError(f"line {text.count(chr(10)) + 1}: no final newline")
    signers = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            signer = _signer(line)
        except SignersError as exc:
            raise SignersError(f"line {number}: {exc.message}") from None
        if signer.line() != line:
            raise SignersError(
                f"line {number}: not as gitkb writes it "
                '(principal namespaces="git"[,valid-after=...][,valid-before=...] key)'
            )
        if signer in signers:
            raise SignersError(f"line {number}: the same line twice")
        signers.append(signer)
    return signers


def _signer(line: str) -> AllowedSigner:
    parts = line.split(" ")
    if len(parts) != 4:
        raise SignersError("a line is: principal, options, key type, key")
    principal, options, key_type, key = parts
    if not PRINCIPAL.fullmatch(principal):
        raise SignersError(f"{principal!r} is no principal gitkb writes (one name, no commas)")
    found = dict(_OPTION.findall(options))
    if found.get("namespaces") != "git":
        raise SignersError('the options start namespaces="git"')
    for name in ("valid-after", "valid-before"):
        if name in found and not _TIME.fullmatch(found[name]):
            raise SignersError(f"{name} is a UTC time YYYYMMDDHHMMSSZ")
    return AllowedSigner(
        principal,
        *public_key(f"{key_type} {key}"),
        found.get("valid-after", ""),
        found.get("valid-before", ""),
    )


def parse_anchor(text: str) -> list[AllowedSigner]:
    """The admins of a server's anchor file (``--admins FILE``): allowed-signers lines as
    a person writes them (comments, blank lines, options and key comments allowed), each
    taken as principal and key; a line that names none is refused by number."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        at = next((n for n, word in enumerate(words) if word in KEY_TYPES), None)
        if at not in (1, 2) or not PRINCIPAL.fullmatch(words[0]):
            raise SignersError(f"line {number}: a line is a principal, options, then a key")
        try:
            found.append(AllowedSigner(words[0], *public_key(" ".join(words[at:]))))
        except SignersError as exc:
            raise SignersError(f"line {number}: {exc.message}") from None
    if not found:
        raise SignersError("names no admin")
    return found


def public_key(text: str) -> tuple[str, str]:
    """(key type, base64 key) of one OpenSSH public key line (its comment dropped)."""
    parts = text.strip().split()
    if len(parts) < 2 or parts[0] not in KEY_TYPES:
        raise SignersError(f"not an OpenSSH public key (one of {', '.join(KEY_TYPES)})")
    key_type, key = parts[0], parts[1]
    try:
        blob = base64.b64decode(key, validate=True) if len(key) <= _MAX_KEY_CHARS else b""
        (length,) = struct.unpack(">I", blob[:4])
        named = blob[4 : 4 + length].decode("ascii")
    except (binascii.Error, struct.error, UnicodeDecodeError):
        named = ""
    if named != key_type or base64.b64encode(blob).decode() != key:
        raise SignersError(f"the {key_type} key does not decode as one")
    return key_type, key


def utc_stamp(when: dt.datetime) -> str:
    """``YYYYMMDDHHMMSSZ`` of a moment (a naive one is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y%m%d%H%M%SZ")
