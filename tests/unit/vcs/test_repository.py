"""The VCS layer against real repositories made by C git."""

from __future__ import annotations

import itertools
import os

import pytest
from helpers import git

from gitkb.errors import GitkbError, NotARepository, RefMoved
from gitkb.vcs import treediff
from gitkb.vcs.fallback import commit_info
from gitkb.vcs.objects.files import ObjectFiles
from gitkb.vcs.objects.pack import REF_DELTA, PackFile
from gitkb.vcs.objects.pack_writer import make_delta
from gitkb.vcs.repository import Repository
from gitkb.vcs.trailers import format_message, parse_trailers


def make_repo(path, files: dict[str, str]):
    git("init", "-q", str(path))
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git("add", "-A", cwd=path)
    git("commit", "-qm", "first", cwd=path)
    return git("rev-parse", "HEAD", cwd=path).stdout.strip()


def test_trailers_round_trip_and_match_c_git(tmp_path):
    message = format_message(
        "kb insert a.b.c.d.e",
        "Strategy: v3 set a new best-so-far.\n\nSecond paragraph: with a colon.",
        [("KB-Action", "insert"), ("KB-Record", "a.b.c.d.e"), ("KB-Gates", "17/17")],
    )
    parsed = parse_trailers(message)
    assert parsed == [("KB-Action", "insert"), ("KB-Record", "a.b.c.d.e"), ("KB-Gates", "17/17")]
    c_git = git("interpret-trailers", "--parse", input=message).stdout
    assert [tuple(line.split(": ", 1)) for line in c_git.splitlines()] == parsed


@pytest.mark.parametrize(
    "message",
    [
        "subject only: with colon\n",
        "subject\n\nbody line\nKey: value\n",  # mixed paragraph: not a pure block
        "subject\n\nKey with space: v\n",
    ],
)
def test_impure_blocks_are_not_trailers(message):
    assert parse_trailers(message) == []


@pytest.mark.parametrize(
    "trailers", [[("KB_Action", "x")], [("KB-Action", "two\nlines")], [("KB-Action", "")]]
)
def test_format_refuses_bad_trailers(trailers):
    with pytest.raises(GitkbError):
        format_message("kb x y", "", trailers)


def test_read_list_and_diff_by_prefix(tmp_path):
    repo_dir = tmp_path / "r"
    first = make_repo(
        repo_dir, {"records/a/x.json": "1", "records/b/y.json": "2", "other.txt": "o"}
    )
    (repo_dir / "records/a/x.json").write_text("changed")
    (repo_dir / "records/c.json").write_text("new")
    (repo_dir / "other.txt").write_text("o2")
    git("rm", "-q", "records/b/y.json", cwd=repo_dir)
    git("add", "-A", cwd=repo_dir)
    git("commit", "-qm", "second", cwd=repo_dir)
    second = git("rev-parse", "HEAD", cwd=repo_dir).stdout.strip()

    repo = Repository.open(repo_dir)
    assert repo.read(first, "records/a/x.json") == b"1"
    assert repo.read(first, "records/missing.json") is None
    assert repo.read(first, "records") is None  # a tree is not a file
    assert [p for p, _ in repo.list_tree(first, "records")] == [
        "records/a/x.json",
        "records/b/y.json",
    ]
    changes = {(c.kind, c.path) for c in treediff.changes(repo, first, second, "records")}
    assert changes == {
        ("modify", "records/a/x.json"),
        ("delete", "records/b/y.json"),
        ("add", "records/c.json"),
    }
    assert [c.sha for c in repo.walk(second)] == [second, first]
    assert repo.is_ancestor(first, second) and not repo.is_ancestor(second, first)


def test_write_commit_without_work_tree_and_cas(tmp_path):
    repo_dir = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(repo_dir))
    repo = Repository.open(repo_dir)
    one = repo.write_commit(None, {"a/b.txt": b"x", "c.txt": b"y"}, format_message("one"))
    repo.update_ref("refs/heads/main", None, one)
    two = repo.write_commit(one, {"a/b.txt": None, "d/e/f.txt": b"z"}, format_message("two"))
    repo.update_ref("refs/heads/main", one, two)
    assert git("ls-tree", "-r", "--name-only", "main", cwd=repo_dir).stdout.split() == [
        "c.txt",
        "d/e/f.txt",
    ]
    assert git("fsck", "--strict", cwd=repo_dir).returncode == 0
    stale = repo.write_commit(one, {"x": b"1"}, format_message("late"))
    with pytest.raises(RefMoved, match="moved"):
        repo.update_ref("refs/heads/main", one, stale)
    with pytest.raises(RefMoved):
        repo.update_ref("refs/heads/main", None, stale)  # must not exist yet
    assert repo.resolve("refs/heads/main") == two
    with pytest.raises(GitkbError, match="outside the tree"):
        repo.write_commit(two, {"../escape": b"1"}, format_message("bad"))


def test_open_from_quarantine_environment(tmp_path, monkeypatch):
    """A server hook sees pushed objects only through GIT_OBJECT_DIRECTORY/ALTERNATES."""
    source = tmp_path / "src"
    sha = make_repo(source, {"f.txt": "pushed"})
    bare = tmp_path / "server.git"
    git("init", "-q", "--bare", str(bare))
    quarantine = tmp_path / "quarantine"
    quarantine.mkdir()
    # Move the source's objects into a directory the bare repo does not know about.
    git("repack", "-qad", cwd=source)
    os.rename(source / ".git" / "objects" / "pack", quarantine / "pack")
    monkeypatch.setenv("GIT_DIR", str(bare))
    assert not Repository.open().has_object(sha)
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(quarantine))
    repo = Repository.open()
    assert repo.read(sha, "f.txt") == b"pushed"


def test_open_errors(tmp_path):
    with pytest.raises(NotARepository, match="no such directory"):
        Repository.open(tmp_path / "missing")
    with pytest.raises(NotARepository, match="not a git repository"):
        Repository.open(tmp_path)


def test_fetch_into_copies_objects_under_a_ref(tmp_path):
    trace = tmp_path / "trace"
    sha = make_repo(trace, {"kernel.py": "print(1)\n"})
    store_dir = tmp_path / "store.git"
    git("init", "-q", "--bare", str(store_dir))
    repo = Repository.open(store_dir)
    repo.fetch_into(trace, sha, "refs/kb/traces/t1")
    assert git("cat-file", "-t", sha, cwd=store_dir).stdout.strip() == "commit"
    assert repo.refs("refs/kb/traces/") == {"refs/kb/traces/t1": sha}
    (trace / "kernel.py").write_text("print(2)\n")
    git("commit", "-qam", "two", cwd=trace)
    newer = git("rev-parse", "HEAD", cwd=trace).stdout.strip()
    repo.fetch_into(trace, newer, "refs/kb/traces/t1")  # fast-forward
    assert repo.resolve("refs/kb/traces/t1") == newer
    with pytest.raises(RefMoved, match="descend"):
        repo.fetch_into(trace, sha, "refs/kb/traces/t1")  # a rewind is refused


@pytest.mark.slow
def test_batched_commits_pack_as_one_and_read_back(tmp_path):
    """A batch of commits is stored as one pack that C git and dulwich both read back."""
    repo_dir = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(repo_dir))
    repo = Repository.open(repo_dir)
    body = [b"line %05d of a large generated file" % n for n in range(5000)]
    tip, versions = None, []
    with repo.batch():
        for n in range(70):
            body.insert((n * 37) % len(body), b"inserted %d" % n)
            data = b"count %d\n" % n + b"\n".join(body) + b"\n"
            tip = repo.write_commit(tip, {"big.txt": data, f"small/{n}.txt": b"x"}, f"v{n}\n")
            versions.append((tip, data))
    repo.update_ref("refs/heads/main", None, tip)
    assert git("fsck", "--strict", "--no-dangling", cwd=repo_dir).returncode == 0
    packs = list((repo_dir / "objects" / "pack").glob("*.pack"))
    assert len(packs) == 1
    # Checksums, entry CRCs and the index, as C git checks a pack it receives.
    assert git("verify-pack", str(packs[0].with_suffix(".idx")), cwd=repo_dir).returncode == 0
    fresh = Repository.open(repo_dir)
    for commit, data in versions[::7]:
        assert fresh.read(commit, "big.txt") == data
        assert git("show", f"{commit}:big.txt", cwd=repo_dir).stdout.encode() == data


@pytest.mark.slow
def test_tree_deltas_rebuild_every_version_as_c_git_and_dulwich_read_it(tmp_path):
    """A batch writes each new version of a folder as an offset delta of the one before
    (chains at most 50 long, git's pack.depth): C git verifies the pack, and every
    version's listing reads back the same through C git and through gitkb's reader."""
    repo_dir = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(repo_dir))
    repo = Repository.open(repo_dir)
    tip, tips = None, []
    with repo.batch():
        for n in range(130):
            edits = {f"records/x/{n:04d}.json": b"%d\n" % n}
            if n % 9 == 0 and n:
                edits[f"records/x/{n - 5:04d}.json"] = b"edited %d\n" % n  # an edit mid-folder
            tip = repo.write_commit(tip, edits, f"v{n}\n")
            tips.append(tip)
    repo.update_ref("refs/heads/main", None, tip)
    assert git("fsck", "--strict", "--no-dangling", cwd=repo_dir).returncode == 0
    (idx,) = (repo_dir / "objects" / "pack").glob("*.idx")
    shown = git("verify-pack", "-v", str(idx), cwd=repo_dir).stdout
    # a delta's line: sha, type, size, size in pack, offset, depth, base
    deltas = [line.split() for line in shown.splitlines() if len(line.split()) == 7]
    chains = [int(fields[5]) for fields in deltas if fields[1] == "tree"]
    assert chains and max(chains) == 50  # deltas were written, and cut at git's depth
    fresh = Repository.open(repo_dir)
    for n, commit in enumerate(tips):
        listed = git("ls-tree", "--name-only", commit, "records/x/", cwd=repo_dir).stdout.split()
        assert len(listed) == n + 1
        assert sorted(path for path, _ in fresh.list_tree(commit, "records/x/")) == listed


def _apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format, read as its documentation states it (pack-format.txt)."""

    def varint(pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = delta[pos]
            value |= (byte & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if not byte & 0x80:
                return value, pos

    source_size, pos = varint(0)
    target_size, pos = varint(pos)
    assert source_size == len(base)
    out = bytearray()
    while pos < len(delta):
        op = delta[pos]
        pos += 1
        if op & 0x80:  # copy: offset bytes under bits 0-3, size bytes under bits 4-6
            offset = size = 0
            for bit in range(4):
                if op & (1 << bit):
                    offset |= delta[pos] << (8 * bit)
                    pos += 1
            for bit in range(3):
                if op & (1 << (4 + bit)):
                    size |= delta[pos] << (8 * bit)
                    pos += 1
            out += base[offset : offset + (size or 0x10000)]
        else:
            assert op, "opcode 0 is reserved"
            out += delta[pos : pos + op]
            pos += op
    assert len(out) == target_size
    return bytes(out)


def test_delta_of_any_edit_rebuilds_the_target():
    """The delta writer against git's delta format: heads, tails, inserts, deletes,
    empty sides and spans longer than one insert instruction."""
    import random

    rng = random.Random(3)
    for _ in range(300):
        base = bytes(rng.randrange(4) for _ in range(rng.randrange(0, 600)))
        start = rng.randrange(len(base) + 1)
        end = rng.randrange(start, len(base) + 1)
        insert = bytes(rng.randrange(4) for _ in range(rng.randrange(0, 400)))
        target = base[:start] + insert + base[end:]
        assert _apply_delta(base, make_delta(base, target)) == target


@pytest.mark.slow
def test_entry_changes_match_c_git_diff_tree(tmp_path):
    """The raw-bytes diff of one folder agrees with C git on adds, edits, deletes, mode
    changes and subfolders, in a folder that grows a file per commit, loose and packed."""
    import random

    repo_path = tmp_path / "r"
    make_repo(repo_path, {"memory/v0.json": "{}\n"})
    rng = random.Random(7)
    shas = [git("rev-parse", "HEAD", cwd=repo_path).stdout.strip()]
    for n in range(1, 40):
        folder = repo_path / "memory"
        (folder / f"v{n}.json").write_text(f'{{"n": {n}}}\n')
        if n % 7 == 0:
            (folder / f"v{rng.randrange(n)}.json").write_text("edited\n")
        if n % 11 == 0:
            (folder / "sub").mkdir(exist_ok=True)
            (folder / "sub" / f"x{n}").write_text("x\n")
        if n % 13 == 0:
            git("rm", "-q", f"memory/v{n - 1}.json", cwd=repo_path)
        if n % 17 == 0:
            os.chmod(folder / "v1.json", 0o755)
        git("add", "-A", cwd=repo_path)
        git("commit", "-qm", f"v{n}", cwd=repo_path)
        shas.append(git("rev-parse", "HEAD", cwd=repo_path).stdout.strip())

    def expected(old, new):
        out = git("diff-tree", "-r", "--no-renames", old, new, "--", "memory", cwd=repo_path)
        found = {}
        for line in out.stdout.splitlines():
            meta, path = line.split("\t")
            name, _, below = path.removeprefix("memory/").partition("/")
            kind = {"A": "add", "D": "delete"}.get(meta.split()[-1], "modify")
            if below:  # a file in a subfolder: the folder entry itself changed
                held = [git("cat-file", "-e", f"{c}:memory/{name}", cwd=repo_path, check=False)
                        for c in (old, new)]  # fmt: skip
                kind = {(0, 0): "modify", (1, 0): "add", (0, 1): "delete"}[
                    tuple(h.returncode != 0 for h in held)
                ]
            found[name] = kind
        return found

    for packed in (False, True):
        if packed:
            git("gc", "-q", cwd=repo_path)
        repo = Repository.open(repo_path)
        for old, new in itertools.pairwise(shas):
            trees = [repo.tree_entries(repo.commit(c).tree)["memory"][1] for c in (old, new)]
            found = treediff.entry_changes(repo, *trees, "memory")
            got = {c.path.split("/")[1]: c.kind for c in found}
            assert got == expected(old, new), (old, new)


@pytest.mark.slow
def test_trees_written_from_entry_rows_keep_gits_order_and_read_back(tmp_path):
    """Trees are edited as rows of raw entries: folders sort as if their names ended in
    '/', entries are replaced and removed in place, and C git reads every version back."""
    import random

    repo_dir = tmp_path / "rows.git"
    git("init", "-q", "--bare", str(repo_dir))
    repo = Repository.open(repo_dir)
    rng = random.Random(11)
    names = ["foo", "foo.bar", "foo-bar", "foo0", "Foo", "a b", "z"]
    expected: dict[str, bytes] = {}
    tip = None
    for batch in range(3):
        with repo.batch():
            for n in range(40):
                edits: dict[str, bytes | None] = {}
                for _ in range(rng.randint(1, 3)):
                    depth = rng.randint(1, 3)
                    path = "/".join(rng.choice(names) for _ in range(depth))
                    if any(p == path or p.startswith(path + "/") or path.startswith(p + "/")
                           for p in expected if p != path):  # fmt: skip
                        continue  # a file where a folder is (or the other way round)
                    if path in expected and rng.random() < 0.3:
                        edits[path] = None
                    else:
                        edits[path] = f"{batch}-{n}-{path}\n".encode()
                for path, data in edits.items():
                    if data is None:
                        expected.pop(path, None)
                    else:
                        expected[path] = data
                tip = repo.write_commit(tip, edits, f"c{batch}-{n}\n")
        listed = git("ls-tree", "-r", "-z", "--name-only", tip, cwd=repo_dir).stdout
        assert sorted(p for p in listed.split("\0") if p) == sorted(expected)
        assert git("fsck", "--strict", "--no-dangling", cwd=repo_dir).returncode == 0
        fresh = Repository.open(repo_dir)
        assert all(fresh.read(tip, p) == data for p, data in expected.items())
    outside = repo.write_commit(tip, {"foo.bar": b"x\n", "late/file": b"y\n"}, "outside\n")
    assert git("cat-file", "-e", f"{outside}:late/file", cwd=repo_dir).returncode == 0


def _delta_history(path, versions: int) -> None:
    """A repository whose pack holds offset-delta chains (git gc --aggressive)."""
    git("init", "-q", str(path))
    body = "".join(f"line {n}: the row loop reads {n} values\n" for n in range(200))
    for n in range(versions):
        (path / "kernel.py").write_text(body + f"# version {n}\n" + "x = 1\n" * n)
        git("add", "-A", cwd=path)
        git("commit", "-qm", f"v{n}", cwd=path)
    git("gc", "-q", "--aggressive", cwd=path)


@pytest.mark.slow
def test_packed_reads_match_dulwich_and_c_git(tmp_path):
    import subprocess

    _delta_history(tmp_path / "r", 30)
    shas = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(deltabase)",
               cwd=tmp_path / "r").stdout.split()  # fmt: skip
    assert any(s != "0" * 40 for s in shas[1::2]), "the pack holds no deltas"
    repo = Repository.open(tmp_path / "r")
    theirs = Repository.open(tmp_path / "r").object_store  # dulwich's own lookup
    for sha in shas[::2]:
        assert repo._read(sha.encode()) == theirs.get_raw(sha.encode())
        kind = git("cat-file", "-t", sha, cwd=tmp_path / "r").stdout.strip()
        assert repo.get_object(sha.encode()).type_name.decode() == kind
        body = subprocess.run(["git", "cat-file", kind, sha], cwd=tmp_path / "r",
                              capture_output=True, check=True).stdout  # fmt: skip
        assert repo._read(sha.encode())[1] == body
    # Past an eighth of the pack the offsets come from one table of the index; an id the
    # pack lacks is not there either (the next pack, the loose objects, dulwich are asked).
    (idx,) = (tmp_path / "r/.git/objects/pack").glob("*.idx")
    packed = PackFile(str(idx.with_suffix("")))
    for sha in shas[::2]:
        assert packed.offset(bytes.fromhex(sha)) is not None
    assert packed._offsets is not None and len(packed._offsets) == len(shas) // 2
    assert packed.offset(bytes(20)) is None


def test_packed_reads_follow_ref_deltas_and_find_new_objects(tmp_path):
    _delta_history(tmp_path / "r", 10)
    src = tmp_path / "r"
    # Without --delta-base-offset git writes ref deltas, as old gits and thin packs have.
    git("init", "-q", "--bare", str(tmp_path / "refs.git"))
    objects = git("rev-list", "--objects", "--all", cwd=src).stdout
    git("pack-objects", "-q", "--no-reuse-delta", str(tmp_path / "refs.git/objects/pack/p"),
        input=objects, cwd=src)  # fmt: skip
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=src).stdout
    for ref in refs.splitlines():
        git("update-ref", *ref.split(), cwd=tmp_path / "refs.git")
    (idx,) = (tmp_path / "refs.git/objects/pack").glob("*.idx")
    types = {(idx.with_suffix(".pack").read_bytes()[int(line.split()[4])] >> 4) & 7
             for line in git("verify-pack", "-v", str(idx)).stdout.splitlines()
             if len(line.split()) >= 5 and len(line.split()[0]) == 40}  # fmt: skip
    assert REF_DELTA in types, "the pack holds no ref delta"
    repo = Repository.open(tmp_path / "refs.git")
    files = ObjectFiles(tmp_path / "refs.git")
    for line in objects.splitlines():
        sha = line.split()[0]
        theirs = Repository.open(src)._read(sha.encode())
        assert files.read(sha) == repo._read(sha.encode()) == theirs
    # An object written after the first read is found (the pack folder is listed again).
    head = repo.resolve("refs/heads/main") or repo.resolve("refs/heads/master")
    repo.read(head, "kernel.py")
    blob = repo.write_blob(b"written after the first read\n")
    assert repo.blob(blob) == b"written after the first read\n"
    with repo.batch():
        packed = repo.write_blob(b"written in a pack after the first read\n")
    assert repo.blob(packed) == b"written in a pack after the first read\n"


def test_commits_read_from_their_bytes_match_dulwich(tmp_path):

    path = tmp_path / "r"
    make_repo(path, {"a.txt": "a\n"})
    git("checkout", "-qb", "side", cwd=path)
    (path / "b.txt").write_text("b\n")
    git("add", "-A", cwd=path)
    git("-c", "user.name=Zoë Ünicode", "commit", "-qm", "side: ümlaut\n\nbody\n\n  indented",
        cwd=path)  # fmt: skip
    git("checkout", "-q", "-", cwd=path)
    git("merge", "-q", "--no-ff", "-m", "merge side", "side", cwd=path)
    # A header with continuation lines (as gpgsig and mergetag have), and no message.
    tree = git("rev-parse", "HEAD^{tree}", cwd=path).stdout.strip()
    head = git("rev-parse", "HEAD", cwd=path).stdout.strip()
    odd = (f"tree {tree}\nparent {head}\nauthor A <a@x> 1700000000 +0100\n"
           "committer C <c@x> 1700000001 -0500\ngpgsig -----BEGIN-----\n line two\n -----END-----\n"
           "\nsigned\n")  # fmt: skip
    signed = git("hash-object", "-t", "commit", "-w", "--stdin", input=odd, cwd=path).stdout
    repo = Repository.open(path)
    shas = [*git("rev-list", "--all", cwd=path).stdout.split(), signed.strip()]
    for sha in shas:
        # dulwich's Commit of the same object, and C git's fields.
        assert repo.commit(sha) == commit_info(sha, repo.get_object(sha.encode()))
        fields = git("log", "-1", "--format=%T %P%n%an <%ae>%n%at", sha, cwd=path).stdout
        tree_parents, author, when = fields.splitlines()
        info = repo.commit(sha)
        assert (info.tree, *info.parents) == tuple(tree_parents.split())
        assert (info.author, info.author_time) == (author, int(when))
    assert repo.commit(signed.strip()).message == "signed\n"
    blob = git("rev-parse", "HEAD:a.txt", cwd=path).stdout.strip()
    with pytest.raises(GitkbError, match="is a blob, not a commit"):
        repo.commit(blob)
