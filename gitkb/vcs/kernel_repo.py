"""The user's repository that holds a kernel file: `git kb optimize` commits a winner
into it, git through dulwich, Mercurial through the `hg` command. Only the target
file's commit, index entry and work-tree bytes are touched; everything else stays as
it was."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import Blob, Commit

from gitkb.errors import GitkbError, RefMoved
from gitkb.fs import atomic_write
from gitkb.vcs.plain import identity
from gitkb.vcs.repository import FILE_MODE, WORK_TREE_TMP, Repository


def _b(text: str) -> bytes:
    return text.encode("utf-8")


@dataclass(frozen=True)
class KernelSnapshot:
    """The target file's state before a run: what the winner commit must still find."""

    vcs: str  # "git" or "hg"
    root: Path
    path: str  # slash path of the target relative to root
    head: str  # the commit HEAD (git) or the working directory's parent (hg) named
    head_content: bytes | None  # the target at head; None when only added, not committed
    index_sha: str | None  # git: blob of the target's index entry
    mode: int


def find_kernel_repo(file: Path, vcs: str = "auto") -> tuple[str, Path]:
    """The repository (kind, root) that holds ``file``: the deepest git or hg root above it.

    ``vcs`` "git" or "hg" looks for that kind only; with "auto", a git and an hg
    root at the same depth are ambiguous and refused.
    """
    found: dict[str, Path] = {}
    for folder in Path(os.path.abspath(file)).parents:
        if "git" not in found and (folder / ".git").exists():
            found["git"] = folder
        if "hg" not in found and (folder / ".hg").is_dir():
            found["hg"] = folder
    if vcs != "auto":
        if vcs not in found:
            raise GitkbError(f"{file}: not inside a {vcs} repository (--vcs {vcs})")
        return vcs, found[vcs]
    if not found:
        raise GitkbError(
            f"{file}: not inside a git or Mercurial repository (--vcs, --no-commit-winner)"
        )
    if len(found) == 2 and found["git"] == found["hg"]:
        raise GitkbError(
            f"{found['git']} is both a git and a Mercurial root; choose one with --vcs git|hg"
        )
    kind = max(found, key=lambda k: len(found[k].parts))
    return kind, found[kind]


def _relative(root: Path, file: Path) -> str:
    return Path(os.path.abspath(file)).relative_to(root).as_posix()


def _read_work_file(root: Path, path: str) -> bytes | None:
    try:
        return (root / path).read_bytes()
    except FileNotFoundError:
        return None


class GitKernelRepo:
    """A git kernel repository: commits written with dulwich, no checkout, no C git."""

    vcs = "git"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repository = Repository.open(root)

    def head(self) -> str | None:
        return self.repository.resolve("HEAD")

    def work_bytes(self, path: str) -> bytes | None:
        return _read_work_file(self.root, path)

    def _index_entry(self, path: str):
        index = self.repository.open_index()
        key = _b(path)
        return index[key] if key in index else None

    def snapshot(self, file: Path) -> KernelSnapshot:
        from dulwich.index import ConflictedIndexEntry

        path = _relative(self.root, file)
        head = self.head()
        if head is None:
            raise GitkbError(f"{self.root}: the repository has no commit yet to build on")
        entry = self._index_entry(path)
        if isinstance(entry, ConflictedIndexEntry):
            raise GitkbError(f"{path} has unresolved merge conflicts ({self.root})")
        if entry is None:
            raise GitkbError(
                f"{path} is not tracked by git (add it, or run with --no-commit-winner) "
                f"({self.root})"
            )
        found = self.repository.lookup(self.repository.tree_of(head), path)
        head_content = None
        mode = entry.mode
        if found is not None and stat.S_ISREG(found[0]):
            head_content = self.repository.blob(found[1].decode())
            mode = found[0]
        return KernelSnapshot("git", self.root, path, head, head_content, entry.sha.decode(), mode)

    def _author(self) -> str:
        config = self.repository.config_stack()
        try:
            name = config.get((b"user",), b"name").decode()
            email = config.get((b"user",), b"email").decode()
        except KeyError:
            return identity()
        return f"{name} <{email}>"

    def index_sha(self, path: str) -> str | None:
        entry = self._index_entry(path)
        return None if entry is None or not hasattr(entry, "sha") else entry.sha.decode()

    def commit_file(
        self, snapshot: KernelSnapshot, committed: bytes, work: bytes, message: str
    ) -> str:
        """Commit ``committed`` as the target on top of the snapshot's HEAD, move HEAD by
        compare-and-swap, then set only the target's index entry and work-tree bytes
        (``work``). Raises RefMoved when HEAD is no longer the snapshot's."""
        from dulwich.index import TreeExtension, index_entry_from_stat
        from dulwich.object_store import commit_tree_changes

        repo = self.repository
        path = snapshot.path
        blob = Blob.from_string(committed)
        repo.add_object(blob)
        tree = commit_tree_changes(
            repo.object_store, repo.tree_of(snapshot.head), [(_b(path), snapshot.mode, blob.id)]
        )
        author = self._author()
        now = int(time.time())
        offset = -time.timezone if not time.localtime(now).tm_isdst else -time.altzone
        commit = Commit()
        commit.tree = tree
        commit.parents = [_b(snapshot.head)]
        commit.author = commit.committer = _b(author)
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = offset
        commit.encoding = b"UTF-8"
        commit.message = _b(message)
        repo.add_object(commit)
        sha = commit.id.decode()
        repo.update_ref("HEAD", snapshot.head, sha, reason="gitkb optimize: commit winner")

        target = self.root / path
        atomic_write(target, work, tmp_dir=self.repository.git_dir / WORK_TREE_TMP)
        if snapshot.mode & 0o111:
            os.chmod(target, 0o755)
        index = repo.open_index()
        entry = index_entry_from_stat(os.lstat(target), blob.id, snapshot.mode)
        if work != committed:
            # Stat data of a file whose bytes differ from the entry's blob would make git
            # treat the file as clean; zeroed size and mtime make it look again.
            from dataclasses import replace as _replace

            entry = _replace(entry, size=0, mtime=(0, 0))
        index[_b(path)] = entry
        # The cached tree of the old index would let a later `git commit` record the old
        # target again: drop it, git rebuilds it.
        index._extensions = [e for e in index._extensions if not isinstance(e, TreeExtension)]
        index.write()
        return sha

    def changed_paths(self, sha: str) -> list[str]:
        info = self.repository.commit(sha)
        parent = info.parents[0] if info.parents else None
        return sorted(c.path for c in self.repository.changes(parent, sha))

    def read_at(self, sha: str, path: str) -> bytes | None:
        return self.repository.read(sha, path)

    def parents(self, sha: str) -> list[str]:
        return list(self.repository.commit(sha).parents)

    def message(self, sha: str) -> str:
        return self.repository.commit(sha).message


class HgKernelRepo:
    """A Mercurial kernel repository, driven through the ``hg`` command (HGPLAIN)."""

    vcs = "hg"

    def __init__(self, root: Path) -> None:
        import shutil

        if shutil.which("hg") is None:
            raise GitkbError(f"{root} is a Mercurial repository but `hg` is not on PATH")
        self.root = root

    def _hg(self, *args: str, check: bool = True) -> bytes:
        import subprocess

        env = dict(os.environ, HGPLAIN="1")
        done = subprocess.run(
            ["hg", *args], cwd=self.root, env=env, capture_output=True, stdin=subprocess.DEVNULL
        )
        if check and done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitkbError(
                f"hg {args[0]} failed: {detail[-1] if detail else done.returncode} ({self.root})"
            )
        return done.stdout

    def head(self) -> str | None:
        node = self._hg("log", "-r", ".", "-T", "{node}").decode().strip()
        return None if not node or set(node) == {"0"} else node

    def work_bytes(self, path: str) -> bytes | None:
        return _read_work_file(self.root, path)

    def snapshot(self, file: Path) -> KernelSnapshot:
        path = _relative(self.root, file)
        head = self.head()
        if head is None:
            raise GitkbError(f"{self.root}: the repository has no commit yet to build on")
        status = self._hg("status", "-A", "--", f"path:{path}").decode()
        code = status[:1]
        if code in ("?", "I", ""):
            raise GitkbError(
                f"{path} is not tracked by Mercurial (add it, or run with --no-commit-winner) "
                f"({self.root})"
            )
        if code in ("R", "!"):
            raise GitkbError(f"{path} is removed or missing in the working directory ({self.root})")
        resolve = self._hg("resolve", "-l", "--", f"path:{path}", check=False).decode()
        if resolve.startswith("U "):
            raise GitkbError(f"{path} has unresolved merge conflicts ({self.root})")
        head_content = None if code == "A" else self._hg("cat", "-r", ".", "--", f"path:{path}")
        mode = FILE_MODE | (os.stat(self.root / path).st_mode & 0o111)
        return KernelSnapshot("hg", self.root, path, head, head_content, None, mode)

    def index_sha(self, path: str) -> str | None:
        return None

    def commit_file(
        self, snapshot: KernelSnapshot, committed: bytes, work: bytes, message: str
    ) -> str:
        """Commit only the target with ``committed`` bytes, then leave ``work`` in the file.
        Raises RefMoved when the working directory's parent is no longer the snapshot's."""
        import tempfile

        if self.head() != snapshot.head:
            raise RefMoved(f"the working directory's parent moved during the run ({self.root})")
        target = self.root / snapshot.path
        original = target.read_bytes()
        username = self._hg("config", "ui.username", check=False).decode().strip()
        with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as fh:
            fh.write(_b(message))
            logfile = fh.name
        try:
            target.write_bytes(committed)
            args = ["commit", "-l", logfile]
            if not username:
                args += ["-u", identity()]
            self._hg(*args, "--", f"path:{snapshot.path}")
        except GitkbError:
            target.write_bytes(original)
            raise
        finally:
            os.unlink(logfile)
        target.write_bytes(work)
        sha = self.head()
        if self.parents(sha) != [snapshot.head]:
            raise RefMoved(f"the new commit {sha} does not sit on {snapshot.head} ({self.root})")
        return sha

    def changed_paths(self, sha: str) -> list[str]:
        out = self._hg("status", "--change", sha, "-n").decode()
        return sorted(line for line in out.splitlines() if line)

    def read_at(self, sha: str, path: str) -> bytes | None:
        return self._hg("cat", "-r", sha, "--", f"path:{path}")

    def parents(self, sha: str) -> list[str]:
        out = self._hg("log", "-r", sha, "-T", "{p1.node} {p2.node}").decode().split()
        return [p for p in out if set(p) != {"0"}]

    def message(self, sha: str) -> str:
        return self._hg("log", "-r", sha, "-T", "{desc}").decode()


def open_kernel_repo(file: Path, vcs: str = "auto") -> GitKernelRepo | HgKernelRepo:
    kind, root = find_kernel_repo(file, vcs)
    return GitKernelRepo(root) if kind == "git" else HgKernelRepo(root)
