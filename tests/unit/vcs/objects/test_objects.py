"""The object layer fed damaged bytes: packs and pack indexes with bytes changed or cut
off, loose objects garbled, tree and commit bodies of any bytes, deltas of any bytes.
Every read gives the object or raises ``Unreadable``, never another error; what the
repository serves (its ids checked) is never a wrong object. The objects are C git's,
from one small repository made once; Hypothesis chooses the damage."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitkb.vcs.objects import TYPE_NAMES, TYPE_NUMBERS, Unreadable, tree
from gitkb.vcs.objects.commit import parse_commit
from gitkb.vcs.objects.files import ObjectFiles
from gitkb.vcs.objects.loose import parse_loose
from gitkb.vcs.objects.pack import apply_delta
from gitkb.vcs.objects.pack_writer import make_delta
from gitkb.vcs.repository import Repository
from gitkb.vcs.tree_ids import TreeIds

FEW = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def _git(cwd: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True,
                          check=True).stdout  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[int, bytes]]]:
    """A bare repository whose one pack holds whole objects and offset deltas (a folder
    that changes a little each commit), and every object in it as C git reads it."""
    work = tmp_path_factory.mktemp("objects") / "work"
    _git(work.parent, "init", "-q", "-b", "main", str(work))
    for v in range(6):
        folder = work / "records" / "softmax"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(v + 2):
            (folder / f"r{i}.json").write_text(f'{{"v": {v}, "i": {i}}}\n' * (i + 3))
        (work / "gitkb.toml").write_text(f"[store]\nversion = {v}\n")
        _git(work, "add", "-A")
        _git(work, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", f"v{v}")
    bare = work.parent / "bare.git"
    _git(work.parent, "clone", "-q", "--bare", "--no-local", str(work), str(bare))
    _git(bare, "repack", "-a", "-d", "-q", "-f", "--depth=10")
    head = _git(bare, "rev-parse", "main")
    (bare / "refs" / "heads" / "main").write_bytes(head)  # loose, for the copies to take
    listing = _git(bare, "cat-file", "--batch-all-objects", "--batch")
    objects, at = {}, 0
    while at < len(listing):
        head, at = listing[at : listing.index(b"\n", at)], listing.index(b"\n", at) + 1
        sha, kind, size = head.decode().split()
        objects[sha] = (TYPE_NUMBERS[kind.encode()], listing[at : at + int(size)])
        at += int(size) + 1
    return bare, objects


def _repository(at: Path, bare: Path, files: dict[str, bytes]) -> Path:
    """A bare repository at ``at`` holding ``bare``'s refs and these object ``files``."""
    (at / "refs" / "heads").mkdir(parents=True)
    (at / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    (at / "config").write_bytes(b"[core]\n\tbare = true\n")
    (at / "refs" / "heads" / "main").write_bytes((bare / "refs" / "heads" / "main").read_bytes())
    for name, data in files.items():
        (at / "objects" / name).parent.mkdir(parents=True, exist_ok=True)
        (at / "objects" / name).write_bytes(data)
    return at


def _pack_files(git_dir: Path) -> tuple[Path, Path]:
    (idx,) = (git_dir / "objects" / "pack").glob("*.idx")
    return idx.with_suffix(".pack"), idx


def _damaged(data: bytes, flips: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(data)
    for at, xor in flips:
        out[at % len(out)] ^= xor
    return bytes(out[:cut] if cut is not None else out)


def _assert_reads(git_dir: Path, objects: dict[str, tuple[int, bytes]], asked: list[str]) -> None:
    """The object files give each asked object as some object or raise Unreadable (ids
    are the repository's to check); the repository gives exactly C git's object or
    raises Unreadable."""
    files = ObjectFiles(git_dir)
    repo = Repository.open(git_dir)
    try:
        for sha in asked:
            try:
                kind, body = files.read(sha)
                assert kind in TYPE_NAMES and isinstance(body, bytes)
            except Unreadable:
                pass
            try:
                assert repo._read(sha.encode()) == objects[sha]
            except Unreadable:
                pass
            try:  # a size read from a header, unchecked: a number, or Unreadable
                assert repo.blob_size(sha) >= 0
            except Unreadable:
                pass
    finally:
        files.close()
        repo.close()


damage = st.tuples(
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=4),
    st.one_of(st.none(), st.integers(0, 1 << 20)),
)


@pytest.mark.parametrize("which", ["pack", "idx"])
@FEW
@given(damage=damage, picks=st.lists(st.integers(0, 1 << 16), min_size=1, max_size=6))
def test_a_damaged_pack_or_index_gives_the_object_or_unreadable(made, which, damage, picks):
    bare, objects = made
    shas = sorted(objects)
    pack, idx = _pack_files(bare)
    files = {f"pack/{pack.name}": pack.read_bytes(), f"pack/{idx.name}": idx.read_bytes()}
    target = f"pack/{pack.name if which == 'pack' else idx.name}"
    flips, cut = damage
    data = files[target]
    files[target] = _damaged(data, flips, None if cut is None else cut % (len(data) + 1))
    with tempfile.TemporaryDirectory() as scratch:
        copy = _repository(Path(scratch) / "r.git", bare, files)
        _assert_reads(copy, objects, [shas[p % len(shas)] for p in picks])
        # The read verbs' tree check answers or says it cannot (None), never raises.
        head = (bare / "refs" / "heads" / "main").read_text().strip()
        ids = TreeIds(copy)
        ids.blob_ids(head, ["gitkb.toml", "records/softmax/r0.json"])
        ids.files_under(head, "records")


@FEW
@given(damage=damage, picks=st.lists(st.integers(0, 1 << 16), min_size=1, max_size=4))
def test_a_damaged_loose_object_gives_the_object_or_unreadable(made, damage, picks):
    bare, objects = made
    shas = sorted(objects)
    asked = [shas[p % len(shas)] for p in picks]
    flips, cut = damage
    files = {}
    for sha in set(asked):
        kind, body = objects[sha]
        raw = zlib.compress(b"%s %d\0" % (TYPE_NAMES[kind], len(body)) + body)
        files[f"{sha[:2]}/{sha[2:]}"] = _damaged(
            raw, flips, None if cut is None else cut % (len(raw) + 1)
        )
    with tempfile.TemporaryDirectory() as scratch:
        _assert_reads(_repository(Path(scratch) / "r.git", bare, files), objects, asked)


@FEW
@given(raw=st.binary(max_size=200))
def test_any_bytes_parse_as_a_loose_object_or_unreadable(raw):
    for data in (raw, zlib.compress(raw)):
        try:
            kind, body = parse_loose(data, "x")
            assert kind in TYPE_NAMES and isinstance(body, bytes)
        except Unreadable:
            pass


def _entry(mode: bytes, name: bytes, sha: bytes) -> bytes:
    return mode + b" " + name + b"\0" + sha


entries = st.lists(
    st.builds(
        _entry,
        st.sampled_from([b"100644", b"100755", b"40000", b"120000", b"160000", b"9", b"", b"+7"]),
        st.binary(max_size=8),
        st.binary(min_size=18, max_size=21),
    ),
    max_size=6,
)


@FEW
@given(parts=entries, cut=st.integers(0, 300), junk=st.binary(max_size=6))
def test_any_tree_body_parses_or_is_unreadable(parts, cut, junk):
    raw = b"".join(parts)
    for body in (raw, raw[:cut], raw + junk, junk + raw):
        try:
            found = tree.entries(body)
            assert all(len(sha) == 20 and mode >= 0 for _, mode, sha in found)
            assert len(tree.parse(body)) <= len(found)
            tree.duplicate(body)
        except Unreadable:
            pass
        try:
            for name, (was, now) in tree.changed(raw, body).items():
                assert isinstance(name, str) and was != now
        except Unreadable:
            pass


@FEW
@given(raw=st.binary(max_size=300), header=st.sampled_from([b"", b"tree ", b"author ", b"parent "]))
def test_any_commit_body_parses_or_is_unreadable(raw, header):
    try:
        info = parse_commit("0" * 40, header + raw)
        assert isinstance(info.author_time, int)
    except Unreadable:
        pass


@FEW
@given(base=st.binary(max_size=300), delta=st.binary(max_size=60), target=st.binary(max_size=300))
def test_any_delta_applies_or_is_unreadable(base, delta, target):
    try:
        assert isinstance(apply_delta(base, delta), bytes)
    except Unreadable:
        pass
    assert apply_delta(base, make_delta(base, target)) == target
    made = make_delta(base, target)
    for cut in range(0, len(made), max(1, len(made) // 4)):
        try:
            assert apply_delta(base, made[:cut]) == target
        except Unreadable:
            pass


def test_the_damage_is_seen(made, tmp_path):
    """The properties are not vacuous: a pack whose entries are zeroed reads nothing, and
    the repository says so with Unreadable rather than serving a wrong object."""
    bare, objects = made
    copy = tmp_path / "r.git"
    shutil.copytree(bare, copy)
    pack, _ = _pack_files(copy)
    data = bytearray(pack.read_bytes())
    data[12:-20] = bytes(len(data) - 32)
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    repo = Repository.open(copy)
    for sha in objects:
        with pytest.raises(Unreadable):
            repo._read(sha.encode())
    assert os.path.exists(copy / "objects" / "pack")
