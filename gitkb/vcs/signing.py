"""Commit signatures, made and checked by git's own machinery.

Signing: where git's configuration asks for it (``commit.gpgsign`` true, ``gpg.format``
ssh, ``user.signingkey``), a commit gitkb writes carries a ``gpgsig`` header made by
git's signing program (``gpg.ssh.program``, ``ssh-keygen`` by default) run as git runs
it (``-Y sign -n git -f KEY FILE``; a literal key, ``key::ssh-...``, signs through the
agent with ``-U``), so ``git verify-commit`` accepts it as one from ``git commit -S``.
gitkb never reads the private key: the program does.

Checking: ``verify`` asks C git (``git log`` with ``%G?``) for each commit's signature
against an allowed-signers file, with the commit's own time as the moment checked
(git passes it to ``ssh-keygen -Y verify``), so a key revoked later keeps the commits
it signed while valid.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dulwich.config import ConfigFile

from gitkb.errors import GitkbError
from gitkb.util import runner

if TYPE_CHECKING:
    from dulwich.config import Config

# The server's trust anchor: allowed-signers lines of the admins who may turn access
# on, one value each, in the server repository's own config (never in history).
_ANCHOR = ((b"gitkb",), b"admin")
_SIGN_TIMEOUT_S = 60.0
_VERIFY_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class SigningSettings:
    """git's signing settings as a repository's configuration holds them."""

    gpgsign: bool
    format: str  # gpg.format: openpgp (git's default), ssh, x509
    key: str  # user.signingkey: a file path, or a literal public key
    program: str  # gpg.ssh.program

    def signer(self) -> Signer | None:
        """The signer these settings ask for, or None where commits go unsigned; a
        request gitkb cannot honour is refused rather than written unsigned."""
        if not self.gpgsign:
            return None
        if self.format != "ssh":
            raise GitkbError(
                f"commit.gpgsign is true with gpg.format {self.format}; gitkb signs with "
                "ssh keys only: git config gpg.format ssh"
            )
        if not self.key:
            raise GitkbError(
                "commit.gpgsign is true but user.signingkey is not set: "
                "git config user.signingkey <public key file>"
            )
        return Signer(self.program or "ssh-keygen", self.key)


def settings_of(config: Config) -> SigningSettings:
    """The signing settings of a repository's configuration (with the user's and the
    system's: dulwich's stack of them)."""

    def value(section: tuple[bytes, ...], key: bytes) -> str:
        try:
            return config.get(section, key).decode("utf-8", "replace").strip()
        except KeyError:
            return ""

    try:
        gpgsign = config.get_boolean((b"commit",), b"gpgsign", False)
    except ValueError:
        raise GitkbError("commit.gpgsign is not a boolean in git's configuration") from None
    return SigningSettings(
        bool(gpgsign),
        value((b"gpg",), b"format") or "openpgp",
        value((b"user",), b"signingkey"),
        value((b"gpg", b"ssh"), b"program"),
    )


@dataclass(frozen=True, slots=True)
class Signer:
    """git's ssh signing program and the key it signs with (``user.signingkey``)."""

    program: str
    key: str

    def sign(self, payload: bytes) -> bytes:
        """The armored SSH signature of ``payload`` (a commit without its gpgsig header)."""
        literal = _literal_key(self.key)
        with tempfile.TemporaryDirectory(prefix="gitkb-sign-") as scratch:
            if literal is not None:
                key_file = Path(scratch) / "signing_key.pub"
                key_file.write_text(literal + "\n")
            else:
                key_file = Path(os.path.expanduser(self.key))
            buffer = Path(scratch) / "buffer"
            buffer.write_bytes(payload)
            argv = [self.program, "-Y", "sign", "-n", "git", "-f", str(key_file)]
            argv += ["-U"] if literal is not None else []
            done = runner.run([*argv, str(buffer)], timeout_s=_SIGN_TIMEOUT_S, capture=True)
            signature = Path(f"{buffer}.sig")
            if not done.ok or not signature.is_file():
                why = done.stderr.decode("utf-8", "replace").strip().splitlines()
                raise GitkbError(
                    f"signing the commit with {self.key} failed ({self.program} "
                    f"{done.describe()}{': ' + why[-1] if why else ''})"
                )
            return signature.read_bytes()


def _literal_key(key: str) -> str | None:
    """The public key of a literal ``user.signingkey`` (git's ``key::`` form, or the
    older bare ``ssh-...`` one), or None for a file path."""
    if key.startswith("key::"):
        return key[len("key::") :]
    if key.startswith("ssh-"):
        return key
    return None


@dataclass(frozen=True, slots=True)
class Signature:
    """What git says of one commit's signature: ``state`` good (``principal``: the allowed
    signer it names), unsigned, unmatched (a good signature by a key no line of the file
    allows at the commit's time), expired key or bad; ``key`` the signing key's SHA256
    fingerprint (``SHA256:...``), where git read one."""

    state: str
    principal: str = ""
    key: str = ""


# git's %G? letters: G good and matched; U good, no principal matched (unknown, or
# outside its valid-after/valid-before window); X, Y, R expired or revoked.
_STATES = {"G": "good", "U": "unmatched", "N": "unsigned", "E": "unmatched",
           "X": "expired key", "Y": "expired key", "R": "expired key", "B": "bad"}  # fmt: skip


def verify(git_dir: Path, commits: list[str], allowed_signers: bytes) -> dict[str, Signature]:
    """Each commit's signature checked by C git against ``allowed_signers`` (the bytes of
    an OpenSSH allowed-signers file), in one ``git log`` for them all."""
    if not commits:
        return {}
    with tempfile.TemporaryDirectory(prefix="gitkb-verify-") as scratch:
        signers = Path(scratch) / "allowed_signers"
        signers.write_bytes(allowed_signers)
        argv = [
            "git", f"--git-dir={git_dir}",
            "-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={signers}",
            "-c", "gpg.ssh.revocationFile=", "-c", "log.showSignature=false",
            "log", "--no-walk=unsorted", "--stdin", "--format=%H %G? %GK %GS",
        ]  # fmt: skip
        listed = ("\n".join(commits) + "\n").encode()
        done = runner.run(argv, timeout_s=_VERIFY_TIMEOUT_S, capture=True, stdin=listed)
    if not done.ok:
        why = done.stderr.decode("utf-8", "replace").strip()
        raise GitkbError(f"git could not check the commits' signatures ({done.describe()}: {why})")
    out: dict[str, Signature] = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        sha, letter, key, *name = line.split(" ", 3)
        state = _STATES.get(letter, "bad")
        out[sha] = Signature(state, name[0] if name and state == "good" else "", key)
    return out


def read_anchor(git_dir: Path) -> bytes:
    """The server's anchor as an allowed-signers file (empty: none set)."""
    try:
        config = ConfigFile.from_path(str(git_dir / "config"))
    except FileNotFoundError:
        return b""
    return b"".join(line + b"\n" for line in _anchor_lines(config))


def write_anchor(git_dir: Path, lines: list[str]) -> None:
    """Set the server's anchor to ``lines`` (allowed-signers lines), replacing any."""
    path = str(git_dir / "config")
    config = ConfigFile.from_path(path)
    if _anchor_lines(config):
        config.remove(*_ANCHOR)
    for n, line in enumerate(lines):
        (config.add if n else config.set)(*_ANCHOR, line.encode())
    config.write_to_path(path)


def _anchor_lines(config: ConfigFile) -> list[bytes]:
    try:
        return list(config.get_multivar(*_ANCHOR))
    except KeyError:
        return []
