"""A git repository seen through gitkb's narrow interface, over dulwich.

Open a repository (also from a server hook's quarantine environment), read blobs
and trees at a commit, diff two commits under a path prefix, write commits without
a work tree (in batches stored as one pack), move refs by compare-and-swap under
git's own ``.lock`` protocol, serialize local writers, and copy another
repository's objects under a ref.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import stat
import struct
import weakref
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dulwich.errors import NotGitRepository
from dulwich.objects import Commit
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from gitkb.errors import GitkbError, NotARepository, RefMoved, os_reason
from gitkb.util import log
from gitkb.vcs import pack, rawtree, treediff
from gitkb.vcs.commits import TREE_MODE, CommitWriting
from gitkb.vcs.trailers import parse_trailers

if TYPE_CHECKING:
    from dulwich.config import StackedConfig
    from dulwich.index import Index
    from dulwich.object_store import DiskObjectStore
    from dulwich.objects import ShaFile

ZERO_SHA = "0" * 40

# Work-tree files are written here first and renamed into place, so a crash
# leaves no partial file among the user's files.
WORK_TREE_TMP = "gitkb-tmp"

logger = log.logger(__name__)
_RECENT_RAW = 4
_COMMIT, _BLOB = 1, 3  # git's object type numbers


def _commit_info(sha: str, obj: Commit) -> CommitInfo:
    return CommitInfo(
        sha=sha,
        parents=tuple(p.decode() for p in obj.parents),
        author=obj.author.decode("utf-8", "replace"),
        committer=obj.committer.decode("utf-8", "replace"),
        author_time=obj.author_time,
        commit_time=obj.commit_time,
        message=obj.message.decode("utf-8", "replace"),
        tree=obj.tree.decode(),
    )


def _parse_commit(sha: str, raw: bytes) -> CommitInfo:
    """A commit object's fields read from its bytes: the headers git writes (``tree``,
    ``parent``, ``author``, ``committer``; others and their continuation lines skipped),
    a blank line, the message. Walking a trace reads every commit once; a dulwich Commit
    costs several times this."""
    head, _, message = raw.partition(b"\n\n")
    tree, parents, people = b"", [], {}
    for line in head.split(b"\n"):
        name, _, value = line.partition(b" ")
        if name == b"parent":
            parents.append(value.decode())
        elif name == b"tree":
            tree = value
        elif name in (b"author", b"committer") and name not in people:
            ident, when, _zone = value.rsplit(b" ", 2)
            people[name] = (ident.decode("utf-8", "replace"), int(when))
    author, author_time = people[b"author"]
    committer, commit_time = people[b"committer"]
    return CommitInfo(
        sha=sha,
        parents=tuple(parents),
        author=author,
        committer=committer,
        author_time=author_time,
        commit_time=commit_time,
        message=message.decode("utf-8", "replace"),
        tree=tree.decode(),
    )


def _b(text: str) -> bytes:
    return text.encode("utf-8")


@dataclass(frozen=True)
class PathChange:
    """One path that differs between two commits; ``kind`` is add, modify or delete."""

    kind: str
    path: str
    old_sha: str | None
    new_sha: str | None
    old_mode: int = 0
    new_mode: int = 0

    @property
    def regular(self) -> tuple[bool, bool]:
        """Whether the old and the new side are regular files."""
        return stat.S_ISREG(self.old_mode), stat.S_ISREG(self.new_mode)


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    author: str
    committer: str
    author_time: int
    commit_time: int
    message: str
    tree: str = ""

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    @property
    def trailers(self) -> list[tuple[str, str]]:
        return parse_trailers(self.message)


class Repository(CommitWriting):
    """A git repository seen through gitkb's narrow interface."""

    def __init__(self, repo: Repo) -> None:
        self._repo = repo
        self._objects = repo.object_store
        # Close pack files before interpreter shutdown, not in __del__ during it.
        weakref.finalize(self, repo.close)
        # Objects written inside batch(): kept in memory, then stored as one pack.
        self._pending: dict[bytes, ShaFile] | None = None
        self._delta_bases: dict[bytes, bytes] = {}  # a batch's tree -> the tree it replaced
        self._deflated: dict[bytes, bytes] = {}  # a batch's blobs, deflated for its pack
        self._committer: str | None = None  # a batch's committer identity
        # Refs as a push will leave them (ref -> sha, None: deleted); see with_refs().
        self._ref_overrides: dict[str, str | None] = {}
        self._recent_raw: dict[bytes, bytes] = {}  # see _raw()
        self._packs: list[pack.PackedObjects] | None = None  # see _read()

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

    @property
    def object_store(self) -> DiskObjectStore:
        """The dulwich object store (for the VCS layer's own modules)."""
        return self._objects

    def open_index(self) -> Index:
        """The work tree's dulwich index (for the VCS layer's own modules)."""
        return self._repo.open_index()

    def config_stack(self) -> StackedConfig:
        return self._repo.get_config_stack()

    # ----------------------------------------------------------------- reading

    def with_refs(self, updates: Mapping[str, str | None]) -> Repository:
        """The same repository, its refs read as if ``updates`` (ref -> sha, None: deleted)
        had landed: what a pre-receive hook checks a push against."""
        view = copy.copy(self)  # shares the dulwich repository and its one finalizer
        view._ref_overrides = {**self._ref_overrides, **updates}
        return view

    def resolve(self, ref: str) -> str | None:
        """The commit a ref name (or full sha) points at, or None when absent."""
        if re.fullmatch(r"[0-9a-f]{40}", ref):
            return ref if self.has_object(ref) else None
        if ref in self._ref_overrides:
            return self._ref_overrides[ref]
        try:
            return self._repo.refs[_b(ref)].decode()
        except KeyError:
            return None

    def refs(self, prefix: str) -> dict[str, str]:
        """All refs under ``prefix`` (e.g. ``refs/kb/traces/``), name to sha."""
        base = prefix.rstrip("/") + "/"
        found = self._repo.refs.as_dict(_b(prefix.rstrip("/")))
        out = {base + k.decode(): v.decode() for k, v in found.items()}
        for ref, sha in self._ref_overrides.items():
            if ref.startswith(base):
                if sha is None:
                    out.pop(ref, None)
                else:
                    out[ref] = sha
        return out

    def has_object(self, sha: str) -> bool:
        key = _b(sha)
        return (self._pending is not None and key in self._pending) or key in self._objects

    def object_type(self, sha: str) -> str | None:
        try:
            return self.get_object(_b(sha)).type_name.decode()
        except KeyError:
            return None

    def commit(self, sha: str) -> CommitInfo:
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            obj = self._pending[key]
            if not isinstance(obj, Commit):
                raise GitkbError(f"{sha} is a {obj.type_name.decode()}, not a commit")
            return _commit_info(sha, obj)
        try:
            kind, raw = self._read(key)
        except KeyError:
            raise GitkbError(f"commit {sha} is not in {self.git_dir}") from None
        if kind != _COMMIT or hashlib.sha1(b"commit %d\0" % len(raw) + raw).hexdigest() != sha:
            # Not a commit, or not what the id says: dulwich's reading names the problem.
            obj = self.get_object(key)
            raise GitkbError(f"{sha} is a {obj.type_name.decode()}, not a commit")
        try:
            return _parse_commit(sha, raw)
        except (KeyError, ValueError):  # an odd header: dulwich's parser decides
            return _commit_info(sha, self.get_object(key))

    def tree_of(self, commit: str) -> bytes:
        return self.get_object(_b(commit)).tree

    def lookup(self, tree_id: bytes, path: str) -> tuple[int, bytes] | None:
        mode, sha = TREE_MODE, tree_id
        for part in (p for p in path.split("/") if p):
            if not stat.S_ISDIR(mode):
                return None
            tree = self.get_object(sha)
            try:
                mode, sha = tree[_b(part)]
            except KeyError:
                return None
        return mode, sha

    def blob_in_tree(self, tree: str, path: str) -> str | None:
        """The sha of the regular file at ``path`` below the tree ``tree``, or None."""
        found = self.lookup(_b(tree), path)
        return None if found is None or not stat.S_ISREG(found[0]) else found[1].decode()

    def blob_sha(self, commit: str, path: str) -> str | None:
        """The sha of the blob at ``path`` in ``commit``, or None when there is no file there."""
        found = self.lookup(self.tree_of(commit), path)
        if found is None or stat.S_ISDIR(found[0]):
            return None
        return found[1].decode()

    def read(self, commit: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``commit``, or None when there is no file there."""
        sha = self.blob_sha(commit, path)
        return None if sha is None else self.blob(sha)

    def blob(self, sha: str) -> bytes:
        key = _b(sha)
        if self._pending is None or key not in self._pending:
            kind, raw = self._read(key)
            if kind == _BLOB and hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest() == sha:
                return raw
        return self.get_object(key).as_raw_string()  # dulwich's reading names any problem

    def is_symlink(self, commit: str, path: str) -> bool:
        found = self.lookup(self.tree_of(commit), path)
        return found is not None and stat.S_ISLNK(found[0])

    def blob_size(self, sha: str) -> int:
        """The size in bytes of object ``sha``, read from its loose-object or pack header
        without inflating the content, so a caller can refuse a huge file unread."""
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            return len(self._pending[key].as_raw_string())
        size = pack.object_size(self._objects, sha)
        if size is None:
            raise GitkbError(f"object {sha} is not in {self.git_dir}")
        return size

    def subtree(self, commit: str, path: str = "") -> str | None:
        """The id of the tree at ``path`` in ``commit`` (the root tree for ""), or None
        when there is no folder there."""
        root = self.tree_of(commit)
        found = (TREE_MODE, root) if not path.strip("/") else self.lookup(root, path.strip("/"))
        return found[1].decode() if found and stat.S_ISDIR(found[0]) else None

    def list_tree(self, commit: str, prefix: str = "") -> Iterator[tuple[str, str]]:
        """Every file under ``prefix`` at ``commit``, as (path, blob sha), depth first, sorted."""
        tree = self.subtree(commit, prefix)
        if tree is not None:
            yield from self.list_tree_id(tree, prefix)

    def list_tree_id(self, tree: str, prefix: str = "") -> Iterator[tuple[str, str]]:
        """Every regular file in the tree ``tree``, as (``prefix``/path, blob sha), sorted."""
        stack = [(prefix.strip("/"), _b(tree))]
        while stack:
            base, tree_id = stack.pop()
            try:
                entries = sorted(
                    self.get_object(tree_id).items(), key=lambda e: e.path, reverse=True
                )
            except (KeyError, ValueError, OSError):
                # A damaged repository: what the missing tree held cannot be listed.
                logger.warning(
                    "tree %s (%s) is missing from %s", tree_id.decode(), base, self.git_dir
                )
                continue
            for entry in entries:
                name = entry.path.decode("utf-8", "surrogateescape")
                full = f"{base}/{name}" if base else name
                if stat.S_ISDIR(entry.mode):
                    stack.append((full, entry.sha))
                elif stat.S_ISREG(entry.mode):
                    yield full, entry.sha.decode()

    def changes(self, old: str | None, new: str, prefix: str = "") -> list[PathChange]:
        """Files under ``prefix`` that differ from commit ``old`` to commit ``new``.

        Identical subtrees are skipped by sha, so the cost follows the change,
        not the size of the tree.
        """
        old_tree = self.subtree(old, prefix) if old is not None else None
        return self.tree_changes(old_tree, self.subtree(new, prefix), prefix)

    def tree_changes(self, old: str | None, new: str | None, prefix: str = "") -> list[PathChange]:
        """Entries that differ from tree ``old`` to tree ``new`` (None: no tree), named
        ``prefix``/path; ``old_mode``/``new_mode`` say whether each side is a regular file,
        a symlink or a submodule (0 where the side has none)."""
        from dulwich.diff_tree import tree_changes

        prefix = prefix.strip("/")
        out = []
        trees = [None if t is None else _b(t) for t in (old, new)]
        for change in tree_changes(self._objects, *trees):
            kind = {"add": "add", "delete": "delete"}.get(change.type, "modify")
            entry = change.new if kind != "delete" else change.old
            name = entry.path.decode("utf-8", "surrogateescape")
            out.append(
                PathChange(
                    kind=kind,
                    path=f"{prefix}/{name}" if prefix else name,
                    old_sha=change.old.sha.decode() if change.old and change.old.sha else None,
                    new_sha=change.new.sha.decode() if change.new and change.new.sha else None,
                    old_mode=(change.old.mode or 0) if change.old else 0,
                    new_mode=(change.new.mode or 0) if change.new else 0,
                )
            )
        return out

    def entry_diff(self, old: str | None, new: str) -> list:
        """Every entry, folders included, that differs from commit ``old`` (None: none) to
        commit ``new``, with the modes and names as written (``gitkb.vcs.treediff``)."""
        old_tree = self.tree_of(old).decode() if old is not None else None
        return list(treediff.walk(self._objects, old_tree, self.tree_of(new).decode()))

    def record_folders(self, commit: str, prefix: str, depth: int) -> list[tuple[str, bytes]]:
        """(path, raw body) of every tree ``depth`` levels below ``prefix`` at ``commit``:
        the folders that hold the files, unparsed, so a caller can search their bytes."""
        top = self.subtree(commit, prefix)
        level = [(prefix, top)] if top else []
        for _ in range(depth):
            deeper = []
            for base, tree in level:
                try:
                    entries = rawtree.parse(self._raw(tree))
                except (rawtree.Malformed, KeyError, ValueError):
                    continue
                deeper += [(f"{base}/{name}", sha) for name, (mode, sha) in entries.items()
                           if stat.S_ISDIR(mode)]  # fmt: skip
            level = deeper
        out = []
        for base, tree in level:
            try:
                out.append((base, self._read(_b(tree))[1]))
            except (KeyError, ValueError, OSError):
                logger.warning("tree %s (%s) is missing from %s", tree, base, self.git_dir)
        return out

    def tree_entries(self, tree: str) -> dict[str, tuple[int, str]]:
        """The direct entries of the tree ``tree``: name -> (mode, sha)."""
        return rawtree.parse(self._raw(tree))

    def entry_changes(self, old: str | None, new: str | None, prefix: str = "") -> list[PathChange]:
        """The direct entries that differ from tree ``old`` to tree ``new`` (None: no tree),
        one level deep (a changed folder is one entry). The cost in Python follows the
        change, not the size of the folder (``gitkb.vcs.rawtree``)."""
        before = self._raw(old) if old is not None else b""
        after = self._raw(new) if new is not None else b""
        out = []
        for name, (was, now) in rawtree.changed(before, after).items():
            out.append(
                PathChange(
                    kind="add" if was is None else "delete" if now is None else "modify",
                    path=f"{prefix.strip('/')}/{name}" if prefix.strip("/") else name,
                    old_sha=was[1] if was else None,
                    new_sha=now[1] if now else None,
                    old_mode=was[0] if was else 0,
                    new_mode=now[0] if now else 0,
                )
            )
        return out

    def _raw(self, sha: str) -> bytes:
        """The body of object ``sha`` without parsing it; the last few are kept, since
        consecutive entry_changes calls share a tree."""
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            return self._pending[key].as_raw_string()
        raw = self._recent_raw.get(key)
        if raw is None:
            raw = self._recent_raw[key] = self._read(key)[1]
            if len(self._recent_raw) > _RECENT_RAW:
                del self._recent_raw[next(iter(self._recent_raw))]
        return raw

    def walk(self, tip: str, exclude: tuple[str, ...] = ()) -> Iterator[CommitInfo]:
        """Commits reachable from ``tip`` and not from ``exclude``, newest first."""
        walker = self._repo.get_walker(
            include=[_b(tip)], exclude=[_b(e) for e in exclude if e and e != ZERO_SHA]
        )
        for entry in walker:
            yield _commit_info(entry.commit.id.decode(), entry.commit)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return any(c.sha == ancestor for c in self.walk(descendant))

    def list_symlinks(self, commit: str, prefix: str = "") -> list[tuple[str, str]]:
        """Every symlink (mode 120000) under ``prefix`` at ``commit``, as (path, link target).

        ``list_tree`` yields regular files only; mining needs the links too, to
        refuse those that leave the trace and to say so in its report.
        """
        prefix = prefix.strip("/")
        root = self.tree_of(commit)
        found = (TREE_MODE, root) if not prefix else self.lookup(root, prefix)
        if found is None or not stat.S_ISDIR(found[0]):
            return []
        out = []
        stack = [(prefix, found[1])]
        while stack:
            base, tree_id = stack.pop()
            for entry in self.get_object(tree_id).items():
                name = entry.path.decode("utf-8", "surrogateescape")
                full = f"{base}/{name}" if base else name
                if stat.S_ISDIR(entry.mode):
                    stack.append((full, entry.sha))
                elif stat.S_ISLNK(entry.mode):
                    target = (
                        self.get_object(entry.sha)
                        .as_raw_string()
                        .decode("utf-8", "surrogateescape")
                    )
                    out.append((full, target))
        return sorted(out)

    def read_many(
        self, commit: str, paths: list[str]
    ) -> dict[str, tuple[str | None, bytes | None]]:
        """For each of ``paths`` at ``commit``: (blob sha, bytes). (None, None) where there
        is no file, or a tree on the way is missing; (sha, None) where the tree names a
        blob the object store cannot produce. Every tree on the way is read once, so many
        files under a few folders cost a few tree reads; nothing raises for one bad path."""
        trees: dict[bytes, ShaFile] = {}
        out: dict[str, tuple[str | None, bytes | None]] = {}
        root = self.tree_of(commit)
        for path in paths:
            mode, sha = TREE_MODE, root
            for part in (p for p in path.split("/") if p):
                if not stat.S_ISDIR(mode):
                    sha = None
                    break
                tree = trees.get(sha)
                try:
                    if tree is None:
                        tree = trees[sha] = self.get_object(sha)
                    mode, sha = tree[_b(part)]
                except (KeyError, ValueError, OSError):
                    sha = None
                    break
            if sha is None or stat.S_ISDIR(mode):
                out[path] = (None, None)
                continue
            try:
                out[path] = (sha.decode(), self.get_object(sha).as_raw_string())
            except (KeyError, ValueError, OSError):
                out[path] = (sha.decode(), None)
        return out

    # ----------------------------------------------------------------- writing

    def get_object(self, sha: bytes) -> ShaFile:
        if self._pending is not None:
            pending = self._pending.get(sha)
            if pending is not None:
                return pending
        from dulwich.objects import ShaFile

        kind, raw = self._read(sha)
        # Checked against its id, as dulwich's own lookup checks it.
        return ShaFile.from_raw_string(kind, raw, verify_sha=sha)

    def _read(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body) of the stored object ``sha`` (hex). The packs found at the
        first read are read directly (``pack.PackedObjects``): dulwich's store lookup
        stats the pack folder for a multi-pack index and walks several layers of Python
        on every object, which is most of a trace read's cost. What they lack (loose
        objects, packs written since, alternates) or leave to dulwich goes through
        dulwich's full lookup."""
        if self._packs is None:
            self._packs = []
            for found in getattr(self._objects, "packs", ()):
                try:
                    self._packs.append(pack.PackedObjects(found))
                except (OSError, ValueError, struct.error):
                    continue  # an empty, vanished or damaged pack: dulwich's lookup decides
        for packed in self._packs:
            try:
                return packed.get(sha)
            except KeyError:
                continue
            except (pack.NotReadHere, PackFileDisappeared, OSError, ValueError, zlib.error):
                break
        try:
            return self._objects.get_raw(sha)
        except struct.error as exc:
            # dulwich reading a truncated or garbled pack index: not one bad object a
            # reader could skip, but storage that git itself refuses to read
            raise GitkbError(
                f"{self.git_dir} is damaged: a pack index cannot be read ({exc}); "
                "`git fsck` names the pack"
            ) from None

    def add_object(self, obj: ShaFile) -> None:
        if self._pending is not None:
            self._pending[obj.id] = obj
        else:
            self._objects.add_object(obj)

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
