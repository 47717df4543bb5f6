"""Commit signing through git's signing program, and git's check of the signatures."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from helpers import git
from helpers.signing import (
    allowed_signers,
    make_key,
    needs_ssh_keygen,
    public,
    sign_with,
    verify_commit,
)

from gitkb.errors import GitkbError
from gitkb.vcs import signing
from gitkb.vcs.fast_import import ImportedCommit, ImportedFile, import_commits
from gitkb.vcs.repository import Repository

pytestmark = needs_ssh_keygen


def _repo(tmp_path):
    return Repository.init(tmp_path / "repo")


def test_a_file_key_signs_as_git_commit_does(tmp_path):
    key = make_key(tmp_path / "keys", "alice")
    repo = _repo(tmp_path)
    sign_with(key, "-C", str(repo.git_dir))
    sha = repo.write_commit(None, {"a.txt": b"a\n"}, "one\n")
    signers = allowed_signers(tmp_path / "signers", ("alice", key))
    assert verify_commit(repo.git_dir, sha, signers).returncode == 0
    raw = git("cat-file", "commit", sha, cwd=repo.git_dir).stdout
    # git's own layout of the header: no trailing blank continuation line
    assert "-----END SSH SIGNATURE-----\n\none\n" in raw
    with repo.batch():
        batched = repo.write_commit(sha, {"b.txt": b"b\n"}, "two\n")
    assert verify_commit(repo.git_dir, batched, signers).returncode == 0
    raws = {c: repo.raw(c) for c in (sha, batched)}
    assert signing.verify(raws, signers.read_bytes())[sha].principal == "alice"


def test_a_literal_key_signs_through_the_agent(tmp_path, monkeypatch):
    key = make_key(tmp_path / "keys", "bob")
    socket = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if socket.exists():
                break
            subprocess.run(["sleep", "0.05"])
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket))
        subprocess.run(["ssh-add", "-q", str(key)], check=True, capture_output=True)
        repo = _repo(tmp_path)
        sign_with(key, "-C", str(repo.git_dir))
        git("config", "user.signingkey", f"key::{public(key)}", cwd=repo.git_dir)
        sha = repo.write_commit(None, {"a.txt": b"a\n"}, "one\n")
    finally:
        os.kill(agent.pid, signal.SIGTERM)
        agent.wait()
    signers = allowed_signers(tmp_path / "signers", ("bob", key))
    assert verify_commit(repo.git_dir, sha, signers).returncode == 0


def test_what_gitkb_cannot_sign_with_is_refused_not_written_unsigned(tmp_path):
    repo = _repo(tmp_path)
    git("config", "commit.gpgsign", "true", cwd=repo.git_dir)
    with pytest.raises(GitkbError, match=r"gpg\.format openpgp"):
        repo.write_commit(None, {"a.txt": b"a\n"}, "one\n")
    git("config", "gpg.format", "ssh", cwd=repo.git_dir)
    with pytest.raises(GitkbError, match=r"user\.signingkey is not set"):
        repo.write_commit(None, {"a.txt": b"a\n"}, "one\n")
    git("config", "user.signingkey", str(tmp_path / "no-such-key"), cwd=repo.git_dir)
    with pytest.raises(GitkbError, match=r"signing the commit with .*no-such-key failed"):
        repo.write_commit(None, {"a.txt": b"a\n"}, "one\n")
    assert repo.resolve("refs/heads/main") is None


def test_verify_names_unsigned_unmatched_and_bad_commits(tmp_path):
    alice, mallory = make_key(tmp_path / "keys", "alice"), make_key(tmp_path / "keys", "mallory")
    repo = _repo(tmp_path)
    unsigned = repo.write_commit(None, {"a.txt": b"a\n"}, "unsigned\n")
    sign_with(alice, "-C", str(repo.git_dir))
    good = repo.write_commit(None, {"a.txt": b"a\n"}, "good\n")
    git("config", "user.signingkey", str(mallory), cwd=repo.git_dir)
    stranger = repo.write_commit(None, {"a.txt": b"a\n"}, "stranger\n")
    raw = git("cat-file", "commit", good, cwd=repo.git_dir).stdout
    tampered = git("hash-object", "-w", "-t", "commit", "--stdin", cwd=repo.git_dir,
                   input=raw.replace("good", "evil")).stdout.strip()  # fmt: skip
    signers = allowed_signers(tmp_path / "signers", ("alice", alice)).read_bytes()
    commits = (unsigned, good, stranger, tampered)
    found = signing.verify({c: repo.raw(c) for c in commits}, signers)
    assert found[unsigned].state == "unsigned"
    assert (found[good].state, found[good].principal) == ("good", "alice")
    assert found[stranger].state == "unmatched" and found[stranger].key.startswith("SHA256:")
    assert found[tampered].state == "bad"


def test_a_fast_import_writes_signed_commits_when_git_signs(tmp_path):
    key = make_key(tmp_path / "keys", "alice")
    sign_with(key)
    one = ImportedCommit("refs/heads/main", 1, b"one\n", {"a": ImportedFile(b"a")}, "A <a@x>", 1)
    two = ImportedCommit("refs/heads/main", 2, b"two\n", {"a": None, "b": ImportedFile(b"b")},
                         "A <a@x>", 2, parent_mark=1)  # fmt: skip
    side = ImportedCommit("refs/heads/side", 3, b"side\n", {}, "A <a@x>", 3, parent_mark=1)
    ids = import_commits(tmp_path / "trace", [one, two, side])
    signers = allowed_signers(tmp_path / "signers", ("alice", key))
    for sha in ids.values():
        assert verify_commit(tmp_path / "trace", sha, signers).returncode == 0
    log = git("log", "--format=%H %P", "main", cwd=tmp_path / "trace").stdout.split()
    assert log == [ids[2], ids[1], ids[1]]
    assert git("rev-parse", "side", cwd=tmp_path / "trace").stdout.strip() == ids[3]
    assert (tmp_path / "trace" / "b").read_text() == "b"


def test_a_signer_names_the_key_it_signs_with(tmp_path):
    """By the public key beside the private one, the .pub named itself, the literal key, or
    (no public key to read) the key inside a signature the program makes."""
    key = make_key(tmp_path / "keys", "alice")
    wanted = subprocess.run(["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True,
                            text=True, check=True).stdout.split()[1]  # fmt: skip
    assert wanted.startswith("SHA256:")
    for configured in (str(key), f"{key}.pub", f"key::{public(key)}"):
        assert signing.Signer("ssh-keygen", configured).fingerprint() == wanted
    os.rename(f"{key}.pub", tmp_path / "elsewhere.pub")
    assert signing.Signer("ssh-keygen", str(key)).fingerprint() == wanted
