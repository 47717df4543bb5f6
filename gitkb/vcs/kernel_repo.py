"""The user's repository that holds a kernel file: `git kb optimize` commits a winner
into it, git through C git (it is the real component there: the repository's hooks,
commit signing, reflogs, its own config), Mercurial through the `hg` command. Only
the target file's commit, index entry and work-tree bytes are touched; everything
else stays as it was."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gitkb.errors import GitkbError, RefMoved
from gitkb.util.files import atomic_write
from gitkb.vcs.objects.tree import FILE_MODE
from gitkb.vcs.plain import identity
from gitkb.vcs.repository import WORK_TREE_TMP

# Variables that would point C git at another repository, index or object store than the
# kernel's own (a caller running inside a hook, say).
_REPOSITORY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


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


def _require(program: str, missing: str) -> None:
    if shutil.which(program) is None:
        raise GitkbError(missing)


def _last_lines(text: bytes, lines: int = 12, limit: int = 1500) -> str:
    shown = text.decode("utf-8", "replace").strip().splitlines()[-lines:]
    return " | ".join(line.rstrip() for line in shown if line.strip())[-limit:]


class KernelRepo(Protocol):
    """What `git kb optimize` needs of the user's repository, git or Mercurial alike."""

    vcs: str

    def head(self) -> str | None: ...

    def work_bytes(self, path: str) -> bytes | None: ...

    def snapshot(self, file: Path) -> KernelSnapshot: ...

    def index_sha(self, path: str) -> str | None: ...

    def index_bytes(self, snapshot: KernelSnapshot) -> bytes | None: ...

    def commit_file(
        self,
        snapshot: KernelSnapshot,
        *,
        committed: bytes,
        staged: bytes | None,
        work: bytes,
        before: bytes,
        message: str,
    ) -> str: ...

    def changed_paths(self, sha: str) -> list[str]: ...

    def read_at(self, sha: str, path: str) -> bytes | None: ...

    def parents(self, sha: str) -> list[str]: ...

    def message(self, sha: str) -> str: ...


class GitKernelRepo:
    """A git kernel repository, driven through C git in the user's own repository."""

    vcs = "git"

    def __init__(self, root: Path) -> None:
        _require("git", f"{root} is a git repository but C git (`git`) is not on PATH")
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
        self.git_dir = Path(self._git("rev-parse", "--absolute-git-dir").decode().strip())

    def _run_git(
        self, *args: str, input: bytes | None = None, env: dict | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "--literal-pathspecs", *args],
            cwd=self.root,
            env=env or self.env,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
        )

    def _git(
        self, *args: str, input: bytes | None = None, env: dict | None = None, check: bool = True
    ) -> bytes:
        done = self._run_git(*args, input=input, env=env)
        if check and done.returncode != 0:
            detail = _last_lines(done.stderr, 1) or f"status {done.returncode}"
            raise GitkbError(f"git {args[0]} failed: {detail} ({self.root})")
        return done.stdout

    def head(self) -> str | None:
        out = self._git("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
        return out.decode().strip() or None

    def work_bytes(self, path: str) -> bytes | None:
        return _read_work_file(self.root, path)

    def _index_entries(self, path: str) -> list[tuple[int, str, int]]:
        """(mode, blob, stage) of the index entries of exactly ``path``."""
        out = self._git("ls-files", "-s", "-z", "--", path)
        entries = []
        for record in out.split(b"\0"):
            if not record:
                continue
            info, name = record.split(b"\t", 1)
            if name.decode("utf-8", "surrogateescape") != path:
                continue  # a folder of that name: its files are not the target
            mode, sha, stage = info.split()
            entries.append((int(mode, 8), sha.decode(), int(stage)))
        return entries

    def blob(self, sha: str) -> bytes:
        return self._git("cat-file", "blob", sha)

    def snapshot(self, file: Path) -> KernelSnapshot:
        path = _relative(self.root, file)
        head = self.head()
        if head is None:
            raise GitkbError(f"{self.root}: the repository has no commit yet to build on")
        entries = self._index_entries(path)
        if any(stage != 0 for _, _, stage in entries):
            raise GitkbError(f"{path} has unresolved merge conflicts ({self.root})")
        if not entries:
            raise GitkbError(
                f"{path} is not tracked by git (add it, or run with --no-commit-winner) "
                f"({self.root})"
            )
        mode, index_sha, _ = entries[0]
        head_content = None
        tree = self._git("ls-tree", "-z", head, "--", path).split(b"\0")[0]
        if tree:
            info = tree.split(b"\t", 1)[0].split()
            if info[1] == b"blob" and int(info[0], 8) != 0o120000:
                mode = int(info[0], 8)
                head_content = self.blob(info[2].decode())
        return KernelSnapshot("git", self.root, path, head, head_content, index_sha, mode)

    def index_sha(self, path: str) -> str | None:
        entries = [e for e in self._index_entries(path) if e[2] == 0]
        return entries[0][1] if entries else None

    def index_bytes(self, snapshot: KernelSnapshot) -> bytes | None:
        """The target's staged content as the snapshot found it."""
        return self.blob(snapshot.index_sha) if snapshot.index_sha else None

    def _identity_env(self, env: dict) -> dict:
        """git's own identity when the user has one; gitkb's otherwise (a fresh CI box)."""
        if self._run_git("var", "GIT_COMMITTER_IDENT", env=env).returncode == 0:
            return env
        name, email = identity().rsplit(" <", 1)
        email = email.rstrip(">")
        return {
            **env,
            "GIT_AUTHOR_NAME": env.get("GIT_AUTHOR_NAME") or name,
            "GIT_AUTHOR_EMAIL": env.get("GIT_AUTHOR_EMAIL") or email,
            "GIT_COMMITTER_NAME": env.get("GIT_COMMITTER_NAME") or name,
            "GIT_COMMITTER_EMAIL": env.get("GIT_COMMITTER_EMAIL") or email,
        }

    def commit_file(
        self,
        snapshot: KernelSnapshot,
        *,
        committed: bytes,
        staged: bytes | None,
        work: bytes,
        before: bytes,
        message: str,
    ) -> str:
        """Commit ``committed`` as the target on top of the snapshot's HEAD with ``git commit``
        (hooks, signing and reflogs as the user's git does them), through a temporary index
        that holds HEAD's tree with only the target changed. Then the real index's target
        entry becomes ``staged`` (the user's staged hunks, carried over) and the work tree's
        target ``work``, if it still holds ``before``. Raises RefMoved when HEAD is no longer
        the snapshot's, GitkbError with the hook's or git's own words when the commit is
        refused; in both cases nothing of the user's is changed."""
        path = snapshot.path
        blob = self._git("hash-object", "-w", "--stdin", input=committed).decode().strip()
        scratch = self.git_dir / f"gitkb-winner-{os.getpid()}"
        index_file, message_file = Path(f"{scratch}.index"), Path(f"{scratch}.msg")
        env = self._identity_env({**self.env, "GIT_INDEX_FILE": str(index_file)})
        try:
            message_file.write_bytes(_b(message))
            self._git("read-tree", snapshot.head, env=env)
            self._git(
                "update-index", "--add", "--cacheinfo", f"{snapshot.mode:o},{blob},{path}", env=env
            )
            if self.head() != snapshot.head:
                raise RefMoved(f"HEAD moved during the run: was {snapshot.head}, now {self.head()}")
            # No timeout, as with `git commit` itself: a passphrase prompt of the user's
            # signing setup may take its time, and what git starts (gpg-agent, a detached
            # gc) is the user's, not the run's to kill.
            done = self._run_git("commit", "--quiet", "-F", str(message_file), env=env)
            if done.returncode != 0:
                said = _last_lines(done.stdout + b"\n" + done.stderr)
                raise GitkbError(
                    f"git commit refused the winner (status {done.returncode}): "
                    f"{said or 'no message'} ({self.root})"
                )
        finally:
            for leftover in (index_file, message_file, Path(f"{index_file}.lock")):
                leftover.unlink(missing_ok=True)
        sha = self.head()
        parents = self.parents(sha) if sha else []
        if parents != [snapshot.head]:
            if sha and parents:
                # Another commit landed while the hooks ran: ours reverts it, so take ours back.
                self._git("update-ref", "-m", "gitkb optimize: undo the winner commit "
                          "(HEAD moved during it)", "HEAD", parents[0], sha)  # fmt: skip
            raise RefMoved(f"HEAD moved while the winner commit ran ({self.root}); not committed")
        self._carry_over(snapshot, staged if staged is not None else committed, work, before)
        return sha

    def _carry_over(
        self, snapshot: KernelSnapshot, staged: bytes, work: bytes, before: bytes
    ) -> None:
        """The target's index entry and work-tree bytes after the commit: the user's staged
        and unstaged hunks as they were, with the winner's change under them."""
        path = snapshot.path
        if self.index_sha(path) == snapshot.index_sha:
            blob = self._git("hash-object", "-w", "--stdin", input=staged).decode().strip()
            self._git("update-index", "--cacheinfo", f"{snapshot.mode:o},{blob},{path}")
        target = self.root / path
        if _read_work_file(self.root, path) == before:
            mode = os.stat(target).st_mode
            atomic_write(target, work, tmp_dir=self.git_dir / WORK_TREE_TMP)
            os.chmod(target, mode & 0o7777)

    def changed_paths(self, sha: str) -> list[str]:
        out = self._git("diff-tree", "-r", "-z", "--no-commit-id", "--name-only", sha)
        return sorted(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)

    def read_at(self, sha: str, path: str) -> bytes | None:
        out = self._git("ls-tree", "-z", sha, "--", path).split(b"\0")[0]
        if not out:
            return None
        return self.blob(out.split(b"\t", 1)[0].split()[2].decode())

    def parents(self, sha: str) -> list[str]:
        return self._git("rev-list", "--parents", "-n", "1", sha).decode().split()[1:]

    def message(self, sha: str) -> str:
        return self._git("log", "-1", "--format=%B", sha).decode("utf-8", "replace")


class HgKernelRepo:
    """A Mercurial kernel repository, driven through the ``hg`` command (HGPLAIN)."""

    vcs = "hg"

    def __init__(self, root: Path) -> None:
        _require("hg", f"{root} is a Mercurial repository but `hg` is not on PATH")
        self.root = root

    def _hg(self, *args: str, check: bool = True) -> bytes:
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

    def index_bytes(self, snapshot: KernelSnapshot) -> bytes | None:
        return None  # Mercurial has no staging area

    def commit_file(
        self,
        snapshot: KernelSnapshot,
        *,
        committed: bytes,
        staged: bytes | None,
        work: bytes,
        before: bytes,
        message: str,
    ) -> str:
        """Commit only the target with ``committed`` bytes, then leave ``work`` in the file.
        Raises RefMoved when the working directory's parent is no longer the snapshot's."""
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


def open_kernel_repo(file: Path, vcs: str = "auto") -> KernelRepo:
    kind, root = find_kernel_repo(file, vcs)
    return GitKernelRepo(root) if kind == "git" else HgKernelRepo(root)
