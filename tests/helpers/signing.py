"""SSH signing keys made by ``ssh-keygen`` in tmp_path, git set to sign with them, git's
own check of a commit's signature, and a commit carrying a forge's kind of signature."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

needs_ssh_keygen = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen"
)


def make_key(folder: Path, name: str) -> Path:
    """A new ed25519 key pair ``folder/name`` (private) and ``name.pub``; returns the
    private key's path."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True
    )
    return key


def public(key: Path) -> str:
    return Path(f"{key}.pub").read_text().strip()


def sign_with(key: Path, *where: str) -> None:
    """Set git (``--global``, or the repository ``where`` names: ``-C PATH``) to sign every
    commit with ``key``."""
    for name, value in (("commit.gpgsign", "true"), ("gpg.format", "ssh"),
                        ("user.signingkey", str(key))):  # fmt: skip
        subprocess.run(["git", *where, "config", *([] if where else ["--global"]), name, value],
                       check=True)  # fmt: skip


def allowed_signers(path: Path, *signers: tuple[str, Path]) -> Path:
    """An allowed-signers file naming each (principal, key)."""
    path.write_text("".join(f'{who} namespaces="git" {public(key)}\n' for who, key in signers))
    return path


def verify_commit(repo: Path, commit: str, signers: Path) -> subprocess.CompletedProcess:
    """``git verify-commit`` of ``commit`` in ``repo`` against the file ``signers``."""
    return subprocess.run(
        ["git", "-C", str(repo), "-c", f"gpg.ssh.allowedSignersFile={signers}",
         "verify-commit", commit], capture_output=True, text=True,
    )  # fmt: skip


# The shape of the OpenPGP signature a forge's merge button puts on the commits it makes
# (GitHub signs them with its own key): armor no SSH verifier reads.
_PGP_ARMOR = (
    "-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQBQJnAAAACRBK7hj4Ov3rIwAAdHIIAGitkb\n=Ab12\n"
    "-----END PGP SIGNATURE-----"
)


def pgp_signed(repo: Path, commit: str) -> str:
    """``commit`` made again, in ``repo``, with a ``gpgsig`` header holding an OpenPGP
    signature, as a forge's merge button writes one; returns its id."""
    raw = subprocess.run(["git", "-C", str(repo), "cat-file", "commit", commit],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    head, _, message = raw.partition("\n\n")
    header = "gpgsig " + "\n ".join(_PGP_ARMOR.splitlines())
    made = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "-t", "commit", "--stdin"],
        input=f"{head}\n{header}\n\n{message}", check=True, capture_output=True, text=True,
    )  # fmt: skip
    return made.stdout.strip()
