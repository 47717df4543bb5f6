"""Commit signatures, made and checked by git's own machinery.

Signing: where git's configuration asks for it (``commit.gpgsign`` true, ``gpg.format``
ssh, ``user.signingkey``), a commit gitkb writes carries a ``gpgsig`` header made by
git's signing program (``gpg.ssh.program``, ``ssh-keygen`` by default) run as git runs
it (``-Y sign -n git -f KEY FILE``; a literal key, ``key::ssh-...``, signs through the
agent with ``-U``), so ``git verify-commit`` accepts it as one from ``git commit -S``.
gitkb never reads the private key: the program does.

Checking: ``verify`` runs ``ssh-keygen -Y verify`` on each commit as git does (the
payload without its gpgsig header, the signer the allowed-signers file names for the
key, the commit's own time as the moment checked), so a key revoked later keeps the
commits it signed while valid; the commits of a push are checked in parallel.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
import struct
import tempfile
import time
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
_KEY_PREFIXES = ("ssh-", "ecdsa-", "sk-")  # an allowed-signers line's key type
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

    def fingerprint(self) -> str:
        """The ``SHA256:`` fingerprint of the key this signer signs with: of the literal
        key, or the public key file (``user.signingkey`` itself when it ends in ``.pub``,
        else that path with ``.pub`` added, as ssh-keygen finds it); where there is none,
        of the key inside a signature the program makes (gitkb never reads a private key)."""
        literal = _literal_key(self.key)
        if literal is None:
            path = Path(os.path.expanduser(self.key))
            public = path if path.name.endswith(".pub") else Path(f"{path}.pub")
            with contextlib.suppress(OSError, UnicodeDecodeError):
                literal = public.read_text(encoding="utf-8")
        words = (literal or "").split()
        if len(words) >= 2:
            with contextlib.suppress(binascii.Error, ValueError):
                return _fingerprint(base64.b64decode(words[1], validate=True))
        return _signing_key(self.sign(b"gitkb: which key signs\n"))


def _fingerprint(key: bytes) -> str:
    """``SHA256:...`` of a public key blob, as ssh-keygen and git name it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key).digest()).decode().rstrip("=")


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
    """What one commit's signature comes to: ``state`` good (``principal``: the allowed
    signer it names), unsigned, unmatched (a good signature by a key no line of the file
    allows at the commit's time) or bad; ``key`` the signing key's fingerprint
    (``SHA256:...``), where the signature names one."""

    state: str
    principal: str = ""
    key: str = ""


# One job per commit, as many at once as there are processors: ``ssh-keygen -Y verify``
# with the signer the key names, at the commit's own time; where that fails,
# ``check-novalidate`` tells a good signature outside the file's windows from a bad one.
# One line a commit, "NAME PRINCIPAL TIME" (PRINCIPAL "-" where the key is listed for no
# one), read as the arguments of one verifying shell each: no other process a commit.
_VERIFY_SCRIPT = r"""
cd "$1" && shift
printf '%s\n' "$@" | xargs -P "$JOBS" -L 1 sh -c '
  if [ "$2" != - ] && ssh-keygen -Y verify -f allowed_signers -I "$2" -n git \
       -s "$1.sig" "-Overify-time=$3" < "$1.payload" >/dev/null 2>&1; then
    echo "$1 good"
  elif ssh-keygen -Y check-novalidate -n git -s "$1.sig" < "$1.payload" >/dev/null 2>&1; then
    echo "$1 unmatched"
  else
    echo "$1 bad"
  fi' verify-one
"""
# A principal as the job line may carry it (no blank, no quote xargs would read).
_PLAIN_PRINCIPAL = re.compile(r"[A-Za-z0-9._+@-]+")


class VerifyTimedOut(GitkbError):
    """Checking the signatures took longer than the time it was given."""


def verify(
    commits: dict[str, bytes], allowed_signers: bytes, timeout_s: float = _VERIFY_TIMEOUT_S
) -> dict[str, Signature]:
    """Each commit's signature (``commits``: id -> the commit object's bytes) checked by
    ``ssh-keygen -Y verify`` against ``allowed_signers`` (an OpenSSH allowed-signers
    file), as git checks one: the payload is the commit without its ``gpgsig`` header,
    the time checked against the file's windows the commit's own. Past ``timeout_s``
    every process it started is killed and ``VerifyTimedOut`` raised."""
    principals = _principals(allowed_signers)
    out: dict[str, Signature] = {}
    with tempfile.TemporaryDirectory(prefix="gitkb-verify-") as scratch:
        folder = Path(scratch)
        (folder / "allowed_signers").write_bytes(allowed_signers)
        jobs: dict[str, tuple[str, str, str]] = {}
        for n, (sha, raw) in enumerate(commits.items()):
            payload, signature, when = _split(raw)
            if signature is None:
                out[sha] = Signature("unsigned")
                continue
            key = _signing_key(signature)
            who = principals.get(key, "")
            name = str(n)
            (folder / f"{name}.payload").write_bytes(payload)
            (folder / f"{name}.sig").write_bytes(signature)
            plain = who if _PLAIN_PRINCIPAL.fullmatch(who) else "-"
            jobs[name] = (sha, key, f"{name} {plain} {when}")
        if jobs:
            env = dict(os.environ, JOBS=str(os.cpu_count() or 1))
            lines = [line for _, _, line in jobs.values()]
            argv = ["sh", "-c", _VERIFY_SCRIPT, "verify", str(folder), *lines]
            done = runner.run(argv, timeout_s=timeout_s, capture=True, env=env)
            if done.timed_out:
                raise VerifyTimedOut(f"checking the signatures {done.describe()}")
            if not done.ok:
                raise GitkbError(f"ssh-keygen could not check the signatures ({done.describe()})")
            states = dict(line.split(" ", 1) for line in done.stdout.decode().splitlines())
            for name, (sha, key, _) in jobs.items():
                state = states.get(name, "bad")
                who = principals.get(key, "") if state == "good" else ""
                out[sha] = Signature(state, who, key)
    return out


def _split(raw: bytes) -> tuple[bytes, bytes | None, str]:
    """(payload, armored signature or None, committer time as UTC ``YYYYMMDDHHMMSSZ``)
    of a commit object's bytes: the payload is the object without its gpgsig header."""
    head, _, message = raw.partition(b"\n\n")
    kept, signature, inside, when = [], [], False, ""
    for line in head.split(b"\n"):
        if line.startswith(b"gpgsig "):
            signature.append(line[len(b"gpgsig ") :])
            inside = True
            continue
        if inside and line.startswith(b" "):
            signature.append(line[1:])
            continue
        inside = False
        kept.append(line)
        if line.startswith(b"committer "):
            seconds = line.rsplit(b" ", 2)[-2]
            stamp = time.gmtime(int(seconds)) if seconds.isdigit() else time.gmtime(0)
            when = time.strftime("%Y%m%d%H%M%SZ", stamp)
    payload = b"\n".join(kept) + b"\n\n" + message
    return payload, (b"\n".join(signature) + b"\n") if signature else None, when


def _signing_key(signature: bytes) -> str:
    """The ``SHA256:`` fingerprint of the public key inside an armored SSH signature
    (SSHSIG: magic, version, then the key as an SSH string); "" where there is none."""
    lines = signature.decode("ascii", "replace").strip().splitlines()
    try:
        blob = base64.b64decode("".join(lines[1:-1]))
        (length,) = struct.unpack(">I", blob[10:14])
        key = blob[14 : 14 + length]
    except (binascii.Error, struct.error, ValueError):
        return ""
    if not blob.startswith(b"SSHSIG") or len(key) != length:
        return ""
    return _fingerprint(key)


def _principals(allowed_signers: bytes) -> dict[str, str]:
    """Key fingerprint -> the first principal an allowed-signers file lists it for."""
    found: dict[str, str] = {}
    for line in allowed_signers.decode("utf-8", "replace").splitlines():
        words = line.split()
        at = next((n for n, w in enumerate(words) if w.startswith(_KEY_PREFIXES)), 0)
        if 0 < at < len(words) - 1 and not words[0].startswith("#"):
            try:
                key = base64.b64decode(words[at + 1], validate=True)
            except (binascii.Error, ValueError):
                continue
            found.setdefault(_fingerprint(key), words[0].split(",")[0])
    return found


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
