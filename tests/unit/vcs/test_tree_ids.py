"""The object-file reader (gitkb.vcs.objects) and the tree check built on it (gitkb.vcs.tree_ids)
answer as C git does, on real repositories stored every way git stores objects: loose,
packed whole, offset and ref deltas, large offsets, alternates, a quarantine, a linked
work tree. What it cannot read it says (None), never a wrong id."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitkb.vcs.objects import Unreadable
from gitkb.vcs.objects.files import ObjectFiles
from gitkb.vcs.objects.pack import apply_delta
from gitkb.vcs.tree_ids import TreeIds


def git(cwd: Path, *args: str, env: dict | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env, check=True)
    return done.stdout.decode()


def _repo(path: Path, versions: int = 12) -> tuple[Path, list[str]]:
    """A repository whose folders change a little each commit (git deltas them when packed)."""
    git(path.parent, "init", "-q", "-b", "main", str(path))
    git(path, "config", "user.name", "t")
    git(path, "config", "user.email", "t@example.com")
    commits = []
    for v in range(versions):
        for family in ("softmax", "gemm", "attention/flash"):
            folder = path / "records" / family
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(v + 1):
                (folder / f"r{i:03d}.json").write_text(f'{{"v": {v}, "i": {i}}}\n' * (i + 1))
        (path / "gitkb.toml").write_text(f"[store]\nversion = {v}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"v{v}")
        commits.append(git(path, "rev-parse", "HEAD").strip())
    if versions:
        (path / "records" / "link.json").symlink_to("softmax/r000.json")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "a symlink")
        commits.append(git(path, "rev-parse", "HEAD").strip())
    return path / ".git", commits


def _c_git_files(git_dir: Path, commit: str, folder: str) -> dict[str, str]:
    out = {}
    listing = git(
        git_dir, "--git-dir", str(git_dir), "ls-tree", "-r", "--full-tree", commit, "--", folder
    )
    for line in listing.splitlines():
        head, name = line.split("\t", 1)
        mode, _, sha = head.split(" ")
        if mode in ("100644", "100755"):
            out[name] = sha
    return out


def _agrees(git_dir: Path, commits: list[str]) -> None:
    ids = TreeIds(git_dir)
    for commit in commits:
        want = _c_git_files(git_dir, commit, "records")
        assert ids.files_under(commit, "records") == want
        odd = ["records//softmax/r000.json", "records/./softmax/r000.json", "records/softmax"]
        paths = [*want, "records/softmax/missing.json", "records/link.json", "gitkb.toml", *odd]
        got = ids.blob_ids(commit, paths)
        assert got is not None
        for path in paths:
            expected = want.get(path)
            if path == "gitkb.toml":
                expected = git(
                    git_dir, "--git-dir", str(git_dir), "rev-parse", f"{commit}:gitkb.toml"
                ).strip()
            assert got[path] == expected, path


@pytest.mark.slow
def test_loose_objects_read_as_c_git_lists_them(tmp_path):
    git_dir, commits = _repo(tmp_path / "r")
    assert not list((git_dir / "objects" / "pack").glob("*.pack"))
    _agrees(git_dir, commits)


@pytest.mark.slow
@pytest.mark.parametrize(
    "gc", [["gc", "-q"], ["gc", "-q", "--aggressive"], ["repack", "-a", "-d", "-q", "--depth=3"]]
)
def test_packed_objects_and_offset_deltas_read_as_c_git_lists_them(tmp_path, gc):
    git_dir, commits = _repo(tmp_path / "r")
    git(git_dir.parent, *gc)
    assert not [p for p in (git_dir / "objects").iterdir() if len(p.name) == 2]
    _agrees(git_dir, commits)


def _entry_types(git_dir: Path) -> list[int]:
    """The type of each entry of the repository's packs, read at the offsets C git lists."""
    types = []
    for idx in (git_dir / "objects" / "pack").glob("*.idx"):
        data = idx.with_suffix(".pack").read_bytes()
        for line in git(git_dir, "verify-pack", "-v", str(idx)).splitlines():
            fields = line.split()
            if len(fields) >= 5 and len(fields[0]) == 40:
                types.append((data[int(fields[4])] >> 4) & 7)
    return types


def _objects(work: Path) -> bytes:
    listing = git(work, "rev-list", "--objects", "--all")
    return ("\n".join(line.split(" ")[0] for line in listing.splitlines()) + "\n").encode()


@pytest.mark.slow
def test_ref_deltas_and_large_offsets_read_as_c_git_lists_them(tmp_path):
    git_dir, commits = _repo(tmp_path / "r")
    names = _objects(git_dir.parent)
    # Ref deltas (bases named by id, as C git sends a pack without --delta-base-offset),
    # indexed by C git into a repository of their own.
    pack = subprocess.run(["git", "pack-objects", "-q", "--stdout"], cwd=git_dir.parent,
                          input=names, capture_output=True, check=True).stdout  # fmt: skip
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    subprocess.run(["git", "index-pack", "--stdin"], cwd=other, input=pack,
                   capture_output=True, check=True)  # fmt: skip
    assert 7 in _entry_types(other)
    _agrees(other, commits)
    # An index whose every offset past the first entry's sits in its 64-bit table.
    large = tmp_path / "large.git"
    git(tmp_path, "init", "-q", "--bare", str(large))
    subprocess.run(["git", "index-pack", "--stdin", "--index-version=2,12"], cwd=large,
                   input=pack, capture_output=True, check=True)  # fmt: skip
    idx = next((large / "objects" / "pack").glob("*.idx")).read_bytes()
    count = int.from_bytes(idx[8 + 1020 : 8 + 1024])
    assert len(idx) - (8 + 1024 + 28 * count + 40) == 8 * (count - 1)
    _agrees(large, commits)


@pytest.mark.slow
def test_alternates_quarantine_and_linked_work_trees_are_followed(tmp_path):
    git_dir, commits = _repo(tmp_path / "r")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--shared", "--bare", str(git_dir.parent), str(clone))
    assert (clone / "objects" / "info" / "alternates").is_file()
    _agrees(clone, commits)
    # A push's quarantine: the pushed objects sit in an incoming folder of their own.
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    env = {
        "GIT_OBJECT_DIRECTORY": str(incoming),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(git_dir / "objects"),
    }
    os.environ.update(env)
    try:
        _agrees(empty, commits)
    finally:
        for key in env:
            del os.environ[key]
    assert TreeIds(empty).blob_ids(commits[-1], ["gitkb.toml"]) is None
    # A linked work tree's git directory names its common directory.
    git(git_dir.parent, "worktree", "add", "-q", str(tmp_path / "wt"), commits[0])
    linked = Path(git(tmp_path / "wt", "rev-parse", "--absolute-git-dir").strip())
    assert linked != git_dir
    _agrees(linked, commits)


def test_what_cannot_be_read_is_said_never_guessed(tmp_path):
    git_dir, commits = _repo(tmp_path / "r", 3)
    git(git_dir.parent, "gc", "-q")
    ids = TreeIds(git_dir)
    assert ids.blob_ids("0" * 40, ["gitkb.toml"]) is None  # no such commit
    blob = git(git_dir.parent, "rev-parse", f"{commits[-1]}:gitkb.toml").strip()
    assert ids.blob_ids(blob, ["gitkb.toml"]) is None  # not a commit
    for pack in (git_dir / "objects" / "pack").glob("*.pack"):
        pack.chmod(0o644)
        data = bytearray(pack.read_bytes())
        data[12:] = bytes(len(data) - 12)  # every entry gone: headers and streams zeroed
        pack.write_bytes(bytes(data))
    assert TreeIds(git_dir).blob_ids(commits[-1], ["gitkb.toml"]) is None
    for idx in (git_dir / "objects" / "pack").glob("*.idx"):
        idx.chmod(0o644)
        idx.write_bytes(b"not an index")
    with pytest.raises(Unreadable):
        ObjectFiles(git_dir).read(commits[-1])


def test_deltas_are_applied_as_git_defines_them():
    base = b"0123456789" * 10
    # copy 10 bytes at 20, insert "xy", copy 0x10000 (size 0) would overrun: cut short
    delta = bytes([100, 12, 0x91, 20, 10, 2]) + b"xy"
    assert apply_delta(base, delta) == b"0123456789xy"
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([99, 12, 0x91, 20, 10]))  # the base's size is wrong
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([100, 12, 0x91, 20]))  # an instruction cut short
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([100, 12, 0]))  # instruction 0 is reserved
    with pytest.raises(Unreadable):
        apply_delta(base, bytes([100, 13, 0x91, 20, 10, 2]) + b"xy")  # not the size stated


def test_an_entry_crafted_with_a_path_for_a_name_is_found_as_a_listing_names_it(tmp_path):
    """A tree written before the rules can hold an entry called ``../../evil.json``; a
    reader's cache names it ``records/../../evil.json``, as C git's listing does."""
    git_dir, _ = _repo(tmp_path / "r", 1)
    work = git_dir.parent

    def hashed(kind: str, data: bytes) -> str:
        done = subprocess.run(["git", "hash-object", "-w", "--literally", "-t", kind, "--stdin"],
                              cwd=work, input=data, capture_output=True, check=True)  # fmt: skip
        return done.stdout.decode().strip()

    blob = hashed("blob", b"{}\n")
    records = hashed("tree", b"100644 ../../evil.json\0" + bytes.fromhex(blob))
    root = hashed("tree", b"40000 records\0" + bytes.fromhex(records))
    commit = git(work, "commit-tree", root, "-m", "crafted").strip()
    ids = TreeIds(git_dir)
    assert ids.files_under(commit, "records") == {"records/../../evil.json": blob}
    found = ids.blob_ids(commit, ["records/../../evil.json", "records/../evil.json", "evil.json"])
    assert found == {
        "records/../../evil.json": blob,
        "records/../evil.json": None,
        "evil.json": None,
    }
