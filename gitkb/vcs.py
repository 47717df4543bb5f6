"""The one VCS layer: every repository access in gitkb goes through this module.

Plumbing over dulwich: open a repository (also from a server hook's quarantine
environment), read blobs and trees at a commit, diff two commits under a path
prefix, write commits without a work tree, move refs by compare-and-swap under
git's own ``.lock`` protocol, serialize local writers, copy another
repository's objects under a ref, and parse/format pure trailer blocks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import sys
import time
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from dulwich.errors import NotGitRepository
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from gitkb.errors import GitkbError, LockTimeout, NotARepository, RefMoved, os_reason

ZERO_SHA = "0" * 40
FILE_MODE = 0o100644
TREE_MODE = 0o040000

TRAILER_KEY = re.compile(r"[A-Za-z0-9-]+")
_TRAILER_LINE = re.compile(r"^([A-Za-z0-9-]+): (.*)$")

# A ref lock that is still there this long after we took the writer lock was
# left by a killed process: C git holds such locks for milliseconds.
_STALE_REF_LOCK_WAIT_S = 1.0
# Work-tree files are written here first and renamed into place, so a crash
# leaves no partial file among the user's files.
_WORK_TREE_TMP = "gitkb-tmp"
_PACK_TMP_PREFIX = "tmp_gitkb_pack-"
# Files at least this large are delta-packed against their next version within a batch;
# every _DELTA_DEPTH-th version is stored whole so reading one never walks a long chain.
_DELTA_MIN = 1 << 16
_DELTA_DEPTH = 32


def _b(text: str) -> bytes:
    return text.encode("utf-8")


@dataclass(frozen=True)
class Change:
    """One path that differs between two commits; ``kind`` is add, modify or delete."""

    kind: str
    path: str
    old_sha: str | None
    new_sha: str | None


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    author: str
    committer: str
    author_time: int
    commit_time: int
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    @property
    def trailers(self) -> list[tuple[str, str]]:
        return parse_trailers(self.message)


# --------------------------------------------------------------------------- trailers


def parse_trailers(message: str) -> list[tuple[str, str]]:
    """Return the message's trailer block: its last paragraph, when every line is ``Key: value``.

    The first paragraph (the subject) never counts, as in C git.
    """
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", message.strip("\n")) if p.strip()]
    if len(paragraphs) < 2:
        return []
    pairs = []
    for line in paragraphs[-1].splitlines():
        match = _TRAILER_LINE.match(line.rstrip())
        if not match:
            return []
        pairs.append((match.group(1), match.group(2)))
    return pairs


def format_message(subject: str, body: str = "", trailers: list[tuple[str, str]] = ()) -> str:
    """Build a commit message ending in one pure trailer block."""
    if "\n" in subject or not subject.strip():
        raise GitkbError(f"commit subject must be one non-empty line, got {subject!r}")
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    lines = []
    for key, value in trailers:
        value = str(value)
        if not TRAILER_KEY.fullmatch(key):
            raise GitkbError(f"trailer key {key!r} must use only A-Z, a-z, 0-9 and '-'")
        if "\n" in value or not value.strip() or value != value.strip():
            raise GitkbError(f"trailer {key} needs a one-line value, got {value!r}")
        lines.append(f"{key}: {value}")
    if lines:
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


# --------------------------------------------------------------------------- repository


def identity() -> str:
    """The committer identity: GITKB_/GIT_ variables, else a fixed gitkb identity."""
    name = os.environ.get("GIT_COMMITTER_NAME") or os.environ.get("GIT_AUTHOR_NAME") or "gitkb"
    email = (
        os.environ.get("GIT_COMMITTER_EMAIL")
        or os.environ.get("GIT_AUTHOR_EMAIL")
        or "gitkb@localhost"
    )
    return f"{name} <{email}>"


class Repository:
    """A git repository seen through gitkb's narrow interface."""

    def __init__(self, repo: Repo) -> None:
        self._repo = repo
        self._objects = repo.object_store
        # Close pack files before interpreter shutdown, not in __del__ during it.
        weakref.finalize(self, repo.close)
        # Objects written inside batch(): kept in memory, then stored as one pack.
        self._pending: dict[bytes, object] | None = None
        # Within a batch: blob id -> the id of the next version of the same file.
        self._successors: dict[bytes, bytes] = {}

    # ----------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: str | os.PathLike | None = None) -> Repository:
        """Open a repository at ``path`` (bare or not).

        With no path, open the one the environment names, as a server hook
        sees it: ``GIT_DIR``, with ``GIT_OBJECT_DIRECTORY`` and
        ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` making quarantined objects visible.
        """
        if path is None:
            git_dir = os.environ.get("GIT_DIR", ".")
            object_dir = os.environ.get("GIT_OBJECT_DIRECTORY")
            alternates = [
                p for p in os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES", "").split(":") if p
            ]
            try:
                repo = Repo(
                    controldir=os.path.abspath(git_dir),
                    object_directory=os.path.abspath(object_dir) if object_dir else None,
                    alternates=[os.path.abspath(p) for p in alternates] or None,
                )
            except (NotGitRepository, FileNotFoundError, NotADirectoryError) as exc:
                raise NotARepository(f"{git_dir}: not a git repository ({exc})") from None
            return cls(repo)
        path = Path(path)
        if not path.exists():
            raise NotARepository(f"{path}: no such directory")
        try:
            repo = Repo(str(path))
        except (NotGitRepository, NotADirectoryError):
            raise NotARepository(f"{path}: not a git repository") from None
        return cls(repo)

    @classmethod
    def init(cls, path: str | os.PathLike, bare: bool = False) -> Repository:
        """Create a new repository whose HEAD names ``refs/heads/main``."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if (path / ".git").exists() or (path / "objects").is_dir():
            raise GitkbError(f"{path}: a git repository already exists there")
        repo = Repo.init_bare(str(path)) if bare else Repo.init(str(path))
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        return cls(repo)

    @property
    def git_dir(self) -> Path:
        return Path(self._repo.controldir())

    @property
    def work_tree(self) -> Path | None:
        return None if self._repo.bare else Path(self._repo.path)

    def close(self) -> None:
        self._repo.close()

    def set_config(self, section: str, key: str, value: str) -> None:
        config = self._repo.get_config()
        config.set((_b(section),), _b(key), _b(value))
        config.write_to_path()

    # ----------------------------------------------------------------- reading

    def resolve(self, ref: str) -> str | None:
        """The commit a ref name (or full sha) points at, or None when absent."""
        if re.fullmatch(r"[0-9a-f]{40}", ref):
            return ref if self.has_object(ref) else None
        try:
            return self._repo.refs[_b(ref)].decode()
        except KeyError:
            return None

    def refs(self, prefix: str) -> dict[str, str]:
        """All refs under ``prefix`` (e.g. ``refs/kb/traces/``), name to sha."""
        found = self._repo.refs.as_dict(_b(prefix.rstrip("/")))
        return {prefix.rstrip("/") + "/" + k.decode(): v.decode() for k, v in found.items()}

    def has_object(self, sha: str) -> bool:
        key = _b(sha)
        return (self._pending is not None and key in self._pending) or key in self._objects

    def object_type(self, sha: str) -> str | None:
        try:
            return self._get(_b(sha)).type_name.decode()
        except KeyError:
            return None

    def commit(self, sha: str) -> CommitInfo:
        try:
            obj = self._get(_b(sha))
        except KeyError:
            raise GitkbError(f"commit {sha} is not in {self.git_dir}") from None
        if not isinstance(obj, Commit):
            raise GitkbError(f"{sha} is a {obj.type_name.decode()}, not a commit")
        return CommitInfo(
            sha=sha,
            parents=tuple(p.decode() for p in obj.parents),
            author=obj.author.decode("utf-8", "replace"),
            committer=obj.committer.decode("utf-8", "replace"),
            author_time=obj.author_time,
            commit_time=obj.commit_time,
            message=obj.message.decode("utf-8", "replace"),
        )

    def _tree_of(self, commit: str) -> bytes:
        return self._get(_b(commit)).tree

    def _lookup(self, tree_id: bytes, path: str) -> tuple[int, bytes] | None:
        mode, sha = TREE_MODE, tree_id
        for part in (p for p in path.split("/") if p):
            if not stat.S_ISDIR(mode):
                return None
            tree = self._get(sha)
            try:
                mode, sha = tree[_b(part)]
            except KeyError:
                return None
        return mode, sha

    def blob_sha(self, commit: str, path: str) -> str | None:
        """The sha of the blob at ``path`` in ``commit``, or None when there is no file there."""
        found = self._lookup(self._tree_of(commit), path)
        if found is None or stat.S_ISDIR(found[0]):
            return None
        return found[1].decode()

    def read(self, commit: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``commit``, or None when there is no file there."""
        sha = self.blob_sha(commit, path)
        return None if sha is None else self.blob(sha)

    def blob(self, sha: str) -> bytes:
        return self._get(_b(sha)).as_raw_string()

    def is_symlink(self, commit: str, path: str) -> bool:
        found = self._lookup(self._tree_of(commit), path)
        return found is not None and stat.S_ISLNK(found[0])

    def blob_size(self, sha: str) -> int:
        """The size in bytes of object ``sha``, read from its loose-object or pack header
        without inflating the content, so a caller can refuse a huge file unread."""
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            return len(self._pending[key].as_raw_string())
        stores = [self._objects]
        while stores:
            store = stores.pop(0)
            if getattr(store, "path", None) is not None:
                loose = Path(store.path) / sha[:2] / sha[2:]
                if loose.is_file():
                    return _loose_object_size(loose)
            for pack in getattr(store, "packs", ()):
                try:
                    offset = pack.index.object_offset(key)
                except KeyError:
                    continue
                return _packed_object_size(Path(pack.data.path), offset)
            stores.extend(getattr(store, "alternates", ()))
        raise GitkbError(f"object {sha} is not in {self.git_dir}")

    def list_tree(self, commit: str, prefix: str = "") -> Iterator[tuple[str, str]]:
        """Every file under ``prefix`` at ``commit``, as (path, blob sha), depth first, sorted."""
        prefix = prefix.strip("/")
        root = self._tree_of(commit)
        found = (TREE_MODE, root) if not prefix else self._lookup(root, prefix)
        if found is None or not stat.S_ISDIR(found[0]):
            return
        stack = [(prefix, found[1])]
        while stack:
            base, tree_id = stack.pop()
            entries = sorted(self._get(tree_id).items(), key=lambda e: e.path, reverse=True)
            for entry in entries:
                name = entry.path.decode("utf-8", "surrogateescape")
                full = f"{base}/{name}" if base else name
                if stat.S_ISDIR(entry.mode):
                    stack.append((full, entry.sha))
                elif stat.S_ISREG(entry.mode):
                    yield full, entry.sha.decode()

    def changes(self, old: str | None, new: str, prefix: str = "") -> list[Change]:
        """Files under ``prefix`` that differ from commit ``old`` to commit ``new``.

        Identical subtrees are skipped by sha, so the cost follows the change,
        not the size of the tree.
        """
        from dulwich.diff_tree import tree_changes

        prefix = prefix.strip("/")

        def subtree(commit: str | None) -> bytes | None:
            if commit is None:
                return None
            root = self._tree_of(commit)
            if not prefix:
                return root
            found = self._lookup(root, prefix)
            return found[1] if found and stat.S_ISDIR(found[0]) else None

        out = []
        for change in tree_changes(self._objects, subtree(old), subtree(new)):
            kind = {"add": "add", "delete": "delete"}.get(change.type, "modify")
            entry = change.new if kind != "delete" else change.old
            name = entry.path.decode("utf-8", "surrogateescape")
            out.append(
                Change(
                    kind=kind,
                    path=f"{prefix}/{name}" if prefix else name,
                    old_sha=change.old.sha.decode() if change.old and change.old.sha else None,
                    new_sha=change.new.sha.decode() if change.new and change.new.sha else None,
                )
            )
        return out

    def walk(self, tip: str, exclude: tuple[str, ...] = ()) -> Iterator[CommitInfo]:
        """Commits reachable from ``tip`` and not from ``exclude``, newest first."""
        walker = self._repo.get_walker(
            include=[_b(tip)], exclude=[_b(e) for e in exclude if e and e != ZERO_SHA]
        )
        for entry in walker:
            yield self.commit(entry.commit.id.decode())

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return any(c.sha == ancestor for c in self.walk(descendant))

    # ----------------------------------------------------------------- writing

    def _get(self, sha: bytes):
        if self._pending is not None:
            pending = self._pending.get(sha)
            if pending is not None:
                return pending
        return self._objects[sha]

    def _add(self, obj) -> None:
        if self._pending is not None:
            self._pending[obj.id] = obj
        else:
            self._objects.add_object(obj)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Objects written inside reach the disk together, as one pack, when the block
        ends without error: many commits cost two files instead of ten each.
        Refs must only be moved after the block."""
        self._pending = {}
        self._successors = {}
        try:
            yield
            if self._pending:
                self._write_pack()
        finally:
            self._pending = None
            self._successors = {}

    def _pack_records(self) -> list:
        """The pending objects as pack records. A file rewritten by one commit after
        another (records/index.json at every admission) forms a chain of versions: the
        newest is stored whole and each older one as a delta against its successor, as
        git itself prefers, so a large file costs its size once per chain, not per commit."""
        from dulwich.pack import UnpackedObject, full_unpacked_object

        records, written = [], set()

        def emit(record, sha: bytes) -> None:
            records.append(record)
            written.add(sha)

        successors = self._successors
        for start in [sha for sha in successors if sha not in successors.values()]:
            chain = [start]
            while chain[-1] in successors and successors[chain[-1]] not in chain:
                chain.append(successors[chain[-1]])
            base = None
            for position, sha in enumerate(reversed(chain)):
                target = self._pending[sha]
                delta = None
                if sha in written:
                    base = target
                    continue
                if base is not None and position % _DELTA_DEPTH:
                    delta = splice_delta(base.as_raw_string(), target.as_raw_string())
                if delta is None:
                    emit(full_unpacked_object(target), sha)
                else:
                    emit(
                        UnpackedObject(
                            target.type_num,
                            delta_base=base.sha().digest(),
                            decomp_chunks=[delta],
                            sha=target.sha().digest(),
                        ),
                        sha,
                    )
                base = target
        # Everything else, and any version a cycle of rewrites kept out of the chains.
        for sha, obj in self._pending.items():
            if sha not in written:
                emit(full_unpacked_object(obj), sha)
        return records

    def _write_pack(self) -> None:
        """Store the pending objects as one pack with its index, written from what we hold
        in memory (dulwich's add_objects would read the pack back to index it). The index
        is renamed into place last: until then git and dulwich ignore the pack."""
        from dulwich.file import GitFile
        from dulwich.pack import write_pack_data, write_pack_index

        records = self._pack_records()
        pack_dir = Path(self._objects.path) / "pack"
        pack_dir.mkdir(exist_ok=True)
        tmp = pack_dir / f"{_PACK_TMP_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
        with GitFile(f"{tmp}.pack", "wb") as fh:
            entries, checksum = write_pack_data(
                fh.write,
                iter(records),
                num_records=len(records),
                object_format=self._objects.object_format,
                compression_level=self._objects.pack_compression_level,
            )
        with GitFile(f"{tmp}.idx", "wb") as fh:
            write_pack_index(fh, sorted((k, v[0], v[1]) for k, v in entries.items()), checksum)
        final = pack_dir / f"pack-{checksum.hex()}"
        os.replace(f"{tmp}.pack", f"{final}.pack")
        os.replace(f"{tmp}.idx", f"{final}.idx")
        self._objects._update_pack_cache()

    def write_blob(self, data: bytes) -> str:
        blob = Blob.from_string(data)
        self._add(blob)
        return blob.id.decode()

    def _edit_tree(
        self, tree_id: bytes | None, edits: dict[tuple[bytes, ...], bytes | None]
    ) -> bytes | None:
        """Apply edits (path parts -> blob id, or None to delete) to one tree; None when empty."""
        tree = Tree()
        if tree_id is not None:
            for entry in self._get(tree_id).items():
                tree.add(entry.path, entry.mode, entry.sha)
        nested: dict[bytes, dict[tuple[bytes, ...], bytes | None]] = {}
        for parts, blob_id in edits.items():
            if len(parts) == 1:
                if blob_id is None:
                    if parts[0] in tree:
                        del tree[parts[0]]
                else:
                    tree.add(parts[0], FILE_MODE, blob_id)
            else:
                nested.setdefault(parts[0], {})[parts[1:]] = blob_id
        for name, sub_edits in nested.items():
            current = tree[name] if name in tree else None
            sub_id = current[1] if current and stat.S_ISDIR(current[0]) else None
            new_sub = self._edit_tree(sub_id, sub_edits)
            if new_sub is None:
                if name in tree:
                    del tree[name]
            else:
                tree.add(name, TREE_MODE, new_sub)
        if not len(tree):
            return None
        self._add(tree)
        return tree.id

    def write_commit(
        self,
        parent: str | None,
        edits: Mapping[str, bytes | None],
        message: str,
        author: str | None = None,
        when: int | None = None,
    ) -> str:
        """Write the objects of one commit (no ref moves): ``parent``'s tree with ``edits``.

        ``edits`` maps a slash path to new file bytes, or to None to delete it.
        """
        blob_edits: dict[tuple[bytes, ...], bytes | None] = {}
        for path, data in edits.items():
            parts = tuple(_b(p) for p in path.split("/") if p)
            if not parts or any(p in (b".", b"..") for p in parts):
                raise GitkbError(f"refusing to write outside the tree: {path!r}")
            blob_edits[parts] = None if data is None else _b(self.write_blob(data))
            if self._pending is not None and data is not None and len(data) >= _DELTA_MIN:
                # A new version of a large file written earlier in this batch: pack it as
                # a delta (see _pack_records).
                previous = self._lookup(self._tree_of(parent), path) if parent else None
                if previous and previous[1] in self._pending and previous[1] != blob_edits[parts]:
                    self._successors[previous[1]] = blob_edits[parts]
        base_tree = self._tree_of(parent) if parent else None
        tree_id = self._edit_tree(base_tree, blob_edits)
        if tree_id is None:
            empty = Tree()
            self._add(empty)
            tree_id = empty.id
        committer = identity()
        now = int(time.time()) if when is None else when
        offset = -time.timezone if not time.localtime(now).tm_isdst else -time.altzone
        commit = Commit()
        commit.tree = tree_id
        commit.parents = [_b(parent)] if parent else []
        commit.author = _b(author or committer)
        commit.committer = _b(committer)
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = offset
        commit.encoding = b"UTF-8"
        commit.message = _b(message)
        self._add(commit)
        return commit.id.decode()

    def update_ref(self, ref: str, old: str | None, new: str, reason: str = "gitkb") -> None:
        """Move ``ref`` from ``old`` (None: must not exist) to ``new``, or raise RefMoved."""
        refs = self._repo.refs
        name = _b(ref)
        try:
            if old is None:
                ok = refs.add_if_new(name, _b(new), message=_b(reason))
            else:
                ok = refs.set_if_equals(name, _b(old), _b(new), message=_b(reason))
        except PermissionError as exc:
            raise GitkbError(f"{ref}: cannot write the ref ({os_reason(exc)})") from None
        except (FileExistsError, OSError) as exc:
            raise RefMoved(
                f"{ref}: could not lock the ref ({exc}); another writer holds it"
            ) from None
        if not ok:
            now = self.resolve(ref)
            raise RefMoved(
                f"{ref} moved during the update: "
                f"expected {old or 'no ref'}, found {now or 'no ref'}"
            )

    def delete_ref(self, ref: str, old: str) -> None:
        if not self._repo.refs.remove_if_equals(_b(ref), _b(old)):
            raise RefMoved(f"{ref} moved; not deleted")

    def fetch_into(self, source: str | os.PathLike, source_sha: str, ref: str) -> str:
        """Copy the objects reachable from ``source_sha`` in another local repository
        into this one and point ``ref`` at it (create or fast-forward only)."""
        from dulwich.client import LocalGitClient

        current = self.resolve(ref)
        if current == source_sha:
            return source_sha
        LocalGitClient().fetch(
            str(source), self._repo, determine_wants=lambda refs, depth=None: [_b(source_sha)]
        )
        if current is not None and not self.is_ancestor(current, source_sha):
            raise RefMoved(f"{ref} is at {current}, which {source_sha} does not descend from")
        self.update_ref(ref, current, source_sha, reason="gitkb: copy trace")
        return source_sha

    # ----------------------------------------------------------------- work tree

    def head_branch(self) -> str | None:
        """The branch HEAD names, when HEAD is symbolic."""
        try:
            target = self._repo.refs.read_ref(b"HEAD")
        except KeyError:
            return None
        if target and target.startswith(b"ref: "):
            return target[5:].strip().decode()
        return None

    def sync_work_tree(self, branch_ref: str, commit: str, paths: list[str]) -> None:
        """After a commit written without a work tree, bring the checked-out files and the
        index entries of ``paths`` up to ``commit`` (only when HEAD is on ``branch_ref``)."""
        from dulwich.index import index_entry_from_stat

        work_tree = self.work_tree
        if work_tree is None or self.head_branch() != branch_ref:
            return
        index = self._repo.open_index()
        for path in paths:
            target = work_tree / path
            sha = self.blob_sha(commit, path)
            key = _b(path)
            if sha is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                if key in index:
                    del index[key]
                continue
            atomic_write(target, self.blob(sha), tmp_dir=self.git_dir / _WORK_TREE_TMP)
            index[key] = index_entry_from_stat(os.lstat(target), _b(sha), FILE_MODE)
        index.write()

    # ----------------------------------------------------------------- locking

    @contextlib.contextmanager
    def writer_lock(self, timeout: float | None = None) -> Iterator[bool]:
        """Serialize gitkb writers on this repository; yields True when a crashed writer
        held the lock last (the caller then repairs what that writer may have left).

        An ``flock`` on ``gitkb-writer.lock`` in the git directory: the kernel
        drops it when a holder dies, and the holder's pid written inside tells
        the next writer that a crash happened.
        """
        if timeout is None:
            timeout = float(os.environ.get("GITKB_LOCK_TIMEOUT", "120"))
        path = self.git_dir / "gitkb-writer.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LockTimeout(
                            f"{path}: another gitkb writer held the lock for over {timeout:.0f} s"
                        ) from None
                    time.sleep(0.005)
            previous = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            if previous:
                print(
                    f"gitkb: recovered the writer lock of {self.git_dir}: "
                    f"process {previous} stopped while holding it",
                    file=sys.stderr,
                )
                self._clear_stale_locks()
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            try:
                yield bool(previous)
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _clear_stale_locks(self) -> None:
        """Remove the ``.lock`` files a killed writer left on refs, the index and loose objects."""
        candidates = [self.git_dir / "index.lock", self.git_dir / "packed-refs.lock"]
        candidates += list((self.git_dir / "refs").rglob("*.lock"))
        deadline = time.monotonic() + _STALE_REF_LOCK_WAIT_S
        for lock in candidates:
            while lock.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            if lock.exists():
                lock.unlink()
                print(f"gitkb: removed stale lock {lock}", file=sys.stderr)
        partials = [
            *(self.git_dir / "objects").glob("??/*.lock"),
            *(self.git_dir / _WORK_TREE_TMP).glob("*"),
        ]
        for partial in partials:
            partial.unlink(missing_ok=True)

    def repair_work_tree(self, branch_ref: str) -> None:
        """Bring every checked-out file whose index entry lags ``branch_ref`` up to it:
        after a writer died between moving the ref and updating the work tree."""
        if self.work_tree is None or self.head_branch() != branch_ref:
            return
        tip = self.resolve(branch_ref)
        if tip is None:
            return
        index = self._repo.open_index()
        stale = [
            (new or old).decode("utf-8", "surrogateescape")
            for (old, new), _, _ in index.changes_from_tree(self._objects, self._tree_of(tip))
        ]
        if stale:
            self.sync_work_tree(branch_ref, tip, stale)
            print(
                f"gitkb: repaired {len(stale)} work-tree files left behind by the crash",
                file=sys.stderr,
            )


def atomic_write(path: Path, data: bytes, tmp_dir: Path | None = None) -> None:
    """Write a file so that readers see the old or the new bytes, never a part.

    ``tmp_dir`` (same file system) keeps the partial file out of the target folder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if tmp_dir is not None:
        tmp_dir.mkdir(exist_ok=True)
    tmp = (tmp_dir or path.parent) / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# --------------------------------------------------------------------------- kernel repositories
# The user's repository that holds a kernel file `git kb optimize` commits a winner into:
# git through dulwich, Mercurial through the `hg` command. Only the target file's
# commit, index entry and work-tree bytes are touched; everything else stays as it was.


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
        index = self.repository._repo.open_index()
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
        found = self.repository._lookup(self.repository._tree_of(head), path)
        head_content = None
        mode = entry.mode
        if found is not None and stat.S_ISREG(found[0]):
            head_content = self.repository.blob(found[1].decode())
            mode = found[0]
        return KernelSnapshot("git", self.root, path, head, head_content, entry.sha.decode(), mode)

    def _author(self) -> str:
        config = self.repository._repo.get_config_stack()
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
        repo._add(blob)
        tree = commit_tree_changes(
            repo._objects, repo._tree_of(snapshot.head), [(_b(path), snapshot.mode, blob.id)]
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
        repo._add(commit)
        sha = commit.id.decode()
        repo.update_ref("HEAD", snapshot.head, sha, reason="gitkb optimize: commit winner")

        target = self.root / path
        atomic_write(target, work, tmp_dir=self.repository.git_dir / _WORK_TREE_TMP)
        if snapshot.mode & 0o111:
            os.chmod(target, 0o755)
        index = repo._repo.open_index()
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


def list_symlinks(repo: Repository, commit: str, prefix: str = "") -> list[tuple[str, str]]:
    """Every symlink (mode 120000) under ``prefix`` at ``commit``, as (path, link target).

    ``Repository.list_tree`` yields regular files only; mining needs the links too, to
    refuse those that leave the trace and to say so in its report.
    """
    prefix = prefix.strip("/")
    root = repo._tree_of(commit)
    found = (TREE_MODE, root) if not prefix else repo._lookup(root, prefix)
    if found is None or not stat.S_ISDIR(found[0]):
        return []
    out = []
    stack = [(prefix, found[1])]
    while stack:
        base, tree_id = stack.pop()
        for entry in repo._get(tree_id).items():
            name = entry.path.decode("utf-8", "surrogateescape")
            full = f"{base}/{name}" if base else name
            if stat.S_ISDIR(entry.mode):
                stack.append((full, entry.sha))
            elif stat.S_ISLNK(entry.mode):
                target = repo._get(entry.sha).as_raw_string().decode("utf-8", "surrogateescape")
                out.append((full, target))
    return sorted(out)


# --------------------------------------------------------------------------- object sizes

_PACK_OFS_DELTA, _PACK_REF_DELTA = 6, 7
_SIZE_PROBE = 64  # inflated bytes enough to hold any object or delta header


def _loose_object_size(path: Path) -> int:
    """The size a loose object's header states (``<type> <size>\\0``), inflating only it."""
    import zlib

    with open(path, "rb") as fh:
        head = zlib.decompressobj().decompress(fh.read(_SIZE_PROBE), _SIZE_PROBE)
    return int(head.split(b"\0", 1)[0].split(b" ", 1)[1])


def _packed_object_size(pack_path: Path, offset: int) -> int:
    """The size of the object at ``offset`` in a pack: the entry header's size, or for a
    delta the result size its delta header states (only that header is inflated)."""
    import zlib

    with open(pack_path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(4096)
    byte = data[0]
    kind, size, shift, pos = (byte >> 4) & 7, byte & 15, 4, 1
    while byte & 0x80:
        byte = data[pos]
        size |= (byte & 0x7F) << shift
        shift, pos = shift + 7, pos + 1
    if kind not in (_PACK_OFS_DELTA, _PACK_REF_DELTA):
        return size
    if kind == _PACK_REF_DELTA:
        pos += 20
    else:
        while data[pos] & 0x80:
            pos += 1
        pos += 1
    delta_head = zlib.decompressobj().decompress(data[pos:], _SIZE_PROBE)
    values, value, shift = [], 0, 0
    for byte in delta_head:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            values.append(value)
            if len(values) == 2:  # base size, then result size
                return value
            value, shift = 0, 0
    raise GitkbError(f"{pack_path}: unreadable delta header at offset {offset}")


def read_many(repo: Repository, commit: str, paths: list[str]) -> dict[str, bytes | None]:
    """The bytes of each of ``paths`` at ``commit`` (None where there is no file), reading
    every tree on the way once: many files under a few folders cost a few tree reads."""
    trees: dict[bytes, object] = {}
    out: dict[str, bytes | None] = {}
    root = repo._tree_of(commit)
    for path in paths:
        mode, sha = TREE_MODE, root
        for part in (p for p in path.split("/") if p):
            if not stat.S_ISDIR(mode):
                sha = None
                break
            tree = trees.get(sha)
            if tree is None:
                tree = trees[sha] = repo._get(sha)
            try:
                mode, sha = tree[_b(part)]
            except KeyError:
                sha = None
                break
        found = sha is not None and not stat.S_ISDIR(mode)
        out[path] = repo._get(sha).as_raw_string() if found else None
    return out


@dataclass
class PushResult:
    """What ``git push`` said: ``accepted`` when every ref landed; ``output`` is git's own
    report (the server hook's lines come back prefixed ``remote:``)."""

    accepted: bool
    returncode: int
    output: str


def push(
    repo_path: str | os.PathLike,
    remote: str,
    refspecs: list[str],
    env: Mapping[str, str] | None = None,
) -> PushResult:
    """Push ``refspecs`` from the repository at ``repo_path`` to ``remote`` (a URL or path)
    with C git: the server side (receive-pack and its pre-receive hook) is the component
    being driven, so the client is git's own. ``env`` is the environment git and the
    server's hook run in (None: this process's). A refusal is a result, not an error."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        raise GitkbError("pushing needs C git on PATH (git push)")
    done = subprocess.run(
        ["git", "push", "--porcelain", remote, *refspecs],
        cwd=repo_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(env) if env is not None else None,
    )
    return PushResult(done.returncode == 0, done.returncode, done.stdout + done.stderr)


# --------------------------------------------------------------------------- deltas


def _common_run(x: bytes, y: bytes, i: int, j: int, limit: int, backwards: bool = False) -> int:
    """How many bytes ``x`` and ``y`` share going forwards from ``x[i]``/``y[j]``, or going
    backwards from just before ``x[i]``/``y[j]``; at most ``limit``. Compared a block at a
    time with bytes slices (memcmp), then bisected within the first differing block."""

    def same(start: int, stop: int) -> bool:
        if backwards:
            return x[i - stop : i - start] == y[j - stop : j - start]
        return x[i + start : i + stop] == y[j + start : j + stop]

    done = 0
    while done < limit:
        step = min(_RUN_BLOCK, limit - done)
        if same(done, done + step):
            done += step
            continue
        low, high = done, done + step  # equal up to low; a difference before high
        while high - low > 1:
            middle = (low + high) // 2
            if same(low, middle):
                low = middle
            else:
                high = middle
        return low
    return limit


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _copy_op(offset: int, size: int) -> bytes:
    out = bytearray()
    while size > 0:
        chunk = min(size, 0xFFFFFF)
        op, args = 0x80, bytearray()
        for k in range(4):
            if (offset >> (8 * k)) & 0xFF:
                op |= 1 << k
                args.append((offset >> (8 * k)) & 0xFF)
        for k in range(3):
            if (chunk >> (8 * k)) & 0xFF:
                op |= 1 << (4 + k)
                args.append((chunk >> (8 * k)) & 0xFF)
        out += bytes([op]) + args
        offset, size = offset + chunk, size - chunk
    return bytes(out)


def _insert_op(data: bytes) -> bytes:
    return b"".join(
        bytes([len(data[k : k + 127])]) + data[k : k + 127] for k in range(0, len(data), 127)
    )


def splice_delta(old: bytes, new: bytes) -> bytes | None:
    """A git delta turning ``old`` into ``new`` when they differ in at most two places
    close to each other's structure (a count changed near the top and a line inserted
    further down: one admission's change to the index); None when that does not give a
    delta much smaller than ``new``. The result is checked by applying it."""
    from dulwich.pack import apply_delta  # the C version where dulwich was built with it

    prefix = _common_run(old, new, 0, 0, min(len(old), len(new)))
    # A small first edit (e.g. "count": 999 -> 1000): resume where a 32-byte run lines up.
    aligned = next(
        (
            (prefix + skip_old, prefix + skip_new)
            for total in range(1, 17)
            for skip_old in range(total + 1)
            for skip_new in [total - skip_old]
            if old[prefix + skip_old : prefix + skip_old + 32]
            == new[prefix + skip_new : prefix + skip_new + 32]
            and prefix + skip_old + 32 <= len(old)
        ),
        None,
    )
    ops = [_copy_op(0, prefix)] if prefix else []
    old_at, new_at = prefix, prefix
    if aligned is not None:
        old_at, new_at = aligned
        ops.append(_insert_op(new[prefix:new_at]))
        run = _common_run(old, new, old_at, new_at, min(len(old) - old_at, len(new) - new_at))
        ops.append(_copy_op(old_at, run))
        old_at, new_at = old_at + run, new_at + run
    tail = _common_run(
        old, new, len(old), len(new), min(len(old) - old_at, len(new) - new_at), True
    )
    ops.append(_insert_op(new[new_at : len(new) - tail]))
    if tail:
        ops.append(_copy_op(len(old) - tail, tail))
    delta = _varint(len(old)) + _varint(len(new)) + b"".join(ops)
    if len(delta) > len(new) // 4:
        return None
    rebuilt = apply_delta(old, delta)
    if (b"".join(rebuilt) if isinstance(rebuilt, list) else rebuilt) != new:
        return None
    return delta


_RUN_BLOCK = 1 << 16
