"""A git repository seen through gitkb's narrow interface: the object layer
(``gitkb.vcs.objects``) below, dulwich beside it for refs, config, walks and what the
object layer leaves to it.

Open a repository (also from a server hook's quarantine environment), read blobs and
trees at a commit, write commits without a work tree (in batches stored as one pack),
move refs by compare-and-swap under git's own ``.lock`` protocol, and copy another
repository's objects under a ref. An object that cannot be read raises ``Unreadable``.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import re
import stat
import time
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path

from dulwich.errors import NotGitRepository
from dulwich.index import Index
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob, Commit, ShaFile, Tree
from dulwich.repo import Repo

from gitkb.errors import GitkbError, NotARepository, RefMoved, os_reason
from gitkb.util import log
from gitkb.vcs import signing
from gitkb.vcs.fallback import DULWICH_UNREADABLE, apply_delta, commit_info
from gitkb.vcs.objects import COMMIT, TREE, TYPE_NAMES, Unreadable, tree
from gitkb.vcs.objects.commit import CommitInfo, parse_commit
from gitkb.vcs.objects.files import ObjectFiles
from gitkb.vcs.objects.pack_writer import deflate, write_pack
from gitkb.vcs.objects.tree import TREE_MODE
from gitkb.vcs.pending import RawTree, Row, edit_tree, rows_of
from gitkb.vcs.plain import identity

ZERO_SHA = "0" * 40

# Work-tree files are written here first and renamed into place, so a crash
# leaves no partial file among the user's files.
WORK_TREE_TMP = "gitkb-tmp"

logger = log.logger(__name__)
_RECENT_RAW = 4


def _b(text: str) -> bytes:
    return text.encode("utf-8")


def _object_id(kind: int, raw: bytes) -> str:
    return hashlib.sha1(b"%s %d\0" % (TYPE_NAMES[kind], len(raw)) + raw).hexdigest()


class Repository:
    """A git repository seen through gitkb's narrow interface."""

    def __init__(self, repo: Repo, from_environment: bool = False) -> None:
        """``from_environment``: ``repo`` was opened as the environment names it (its
        object directories are those git's variables name)."""
        self._repo = repo
        self._objects: DiskObjectStore = repo.object_store
        # The object layer reads what it can (most reads); dulwich what it leaves.
        listed = None if from_environment else [self._objects.path]
        self._files = ObjectFiles(repo.controldir(), apply_delta, listed)
        # Close pack files before interpreter shutdown, not in __del__ during it.
        weakref.finalize(self, repo.close)
        # Objects written inside batch(): kept in memory, then stored as one pack.
        self._pending: dict[bytes, ShaFile | RawTree] | None = None
        self._delta_bases: dict[bytes, bytes] = {}  # a batch's tree -> the tree it replaced
        self._deflated: dict[bytes, bytes] = {}  # a batch's blobs, deflated for its pack
        self._committer: str | None = None  # a batch's committer identity
        self._signer: signing.Signer | None = None  # and signer, read once for its commits
        # Refs as a push will leave them (ref -> sha, None: deleted); see with_refs().
        self._ref_overrides: dict[str, str | None] = {}
        self._recent_raw: dict[bytes, bytes] = {}  # see _raw()

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
            return cls(repo, from_environment=True)
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
        self._files.close()
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
        """commit, tree, blob or tag; None where no object can be read by that id."""
        try:
            return self.get_object(_b(sha)).type_name.decode()
        except Unreadable:
            return None

    def commit(self, sha: str) -> CommitInfo:
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            obj = self._pending[key]
            if not isinstance(obj, Commit):
                raise GitkbError(f"{sha} is a {obj.type_name.decode()}, not a commit")
            return commit_info(sha, obj)
        kind, raw = self._read(key)
        if kind != COMMIT:
            raise GitkbError(f"{sha} is a {TYPE_NAMES[kind].decode()}, not a commit")
        try:
            return parse_commit(sha, raw)
        except Unreadable:  # an odd header: dulwich's parser decides
            obj = self.get_object(key)
            assert isinstance(obj, Commit)
            return commit_info(sha, obj)

    def tree_of(self, commit: str) -> bytes:
        return _b(self.commit(commit).tree)

    def lookup(self, tree_id: bytes, path: str) -> tuple[int, bytes] | None:
        """(mode, hex sha) of the entry at ``path`` below the tree ``tree_id``, or None."""
        mode, sha = TREE_MODE, tree_id
        for part in (p for p in path.split("/") if p):
            if not stat.S_ISDIR(mode):
                return None
            found = self._tree(sha)
            try:
                mode, sha = found[_b(part)]
            except KeyError:
                return None
        return mode, sha

    def _tree(self, sha: bytes) -> Tree | RawTree:
        """The tree ``sha`` (parsed by dulwich, in C: folders of thousands are read often)."""
        found = self.get_object(sha)
        if not isinstance(found, (Tree, RawTree)):
            raise Unreadable(f"{sha.decode()} is a {found.type_name.decode()}, not a tree")
        return found

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
        """The body of object ``sha`` (a blob's bytes)."""
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            return self._pending[key].as_raw_string()
        return self._read(key)[1]

    def is_symlink(self, commit: str, path: str) -> bool:
        found = self.lookup(self.tree_of(commit), path)
        return found is not None and stat.S_ISLNK(found[0])

    def blob_size(self, sha: str) -> int:
        """The size in bytes of object ``sha``, read from its loose-object or pack header
        without inflating the content, so a caller can refuse a huge file unread."""
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            return len(self._pending[key].as_raw_string())
        try:
            return self._files.size(sha)
        except Unreadable:
            return len(self.blob(sha))  # read whole, by dulwich where the layer cannot

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
        for path, mode, sha in self._walk_tree(_b(tree), prefix.strip("/")):
            if stat.S_ISREG(mode):
                yield path, sha.decode()

    def _walk_tree(self, tree_id: bytes, base: str) -> Iterator[tuple[str, int, bytes]]:
        """(path, mode, hex sha) of every entry below ``tree_id`` but folders, sorted; a
        tree that cannot be read is passed over, with a warning."""
        stack = [(base, tree_id)]
        while stack:
            base, tree_id = stack.pop()
            try:
                entries = sorted(self._tree(tree_id).items(), key=lambda e: e.path, reverse=True)
            except Unreadable:
                # A damaged repository: what the missing tree held cannot be listed.
                logger.warning("tree %s (%s) missing from %s", tree_id.decode(), base, self.git_dir)
                continue
            for entry in entries:
                name = entry.path.decode("utf-8", "surrogateescape")
                full = f"{base}/{name}" if base else name
                if stat.S_ISDIR(entry.mode):
                    stack.append((full, entry.sha))
                else:
                    yield full, entry.mode, entry.sha

    def list_symlinks(self, commit: str, prefix: str = "") -> list[tuple[str, str]]:
        """Every symlink (mode 120000) under ``prefix`` at ``commit``, as (path, link target).

        ``list_tree`` yields regular files only; mining needs the links too, to
        refuse those that leave the trace and to say so in its report.
        """
        tree = self.subtree(commit, prefix)
        if tree is None:
            return []
        links = [(path, sha) for path, mode, sha in self._walk_tree(_b(tree), prefix.strip("/"))
                 if stat.S_ISLNK(mode)]  # fmt: skip
        return sorted((path, self.blob(sha.decode()).decode("utf-8", "surrogateescape"))
                      for path, sha in links)  # fmt: skip

    def tree_entries(self, sha: str) -> dict[str, tuple[int, str]]:
        """The direct entries of the tree ``sha``: name -> (mode, sha)."""
        return tree.parse(self.raw(sha))

    def raw(self, sha: str) -> bytes:
        """The body of object ``sha`` without parsing it; the last few are kept, since
        consecutive ``treediff.entry_changes`` calls share a tree."""
        key = _b(sha)
        if self._pending is not None and key in self._pending:
            return self._pending[key].as_raw_string()
        raw = self._recent_raw.get(key)
        if raw is None:
            raw = self._recent_raw[key] = self._read(key)[1]
            if len(self._recent_raw) > _RECENT_RAW:
                del self._recent_raw[next(iter(self._recent_raw))]
        return raw

    def raw_tree(self, sha: str) -> bytes:
        """The body of the tree ``sha``; Unreadable when it is no tree."""
        kind, raw = self._read(_b(sha)) if len(sha) == 40 else (0, b"")
        if kind != TREE:
            raise Unreadable(f"{sha} is not a tree")
        return raw

    def walk(self, tip: str, exclude: tuple[str, ...] = ()) -> Iterator[CommitInfo]:
        """Commits reachable from ``tip`` and not from ``exclude``, newest first."""
        walker = self._repo.get_walker(
            include=[_b(tip)], exclude=[_b(e) for e in exclude if e and e != ZERO_SHA]
        )
        try:
            for entry in walker:
                yield commit_info(entry.commit.id.decode(), entry.commit)
        except DULWICH_UNREADABLE as exc:
            raise Unreadable(f"the history of {tip} cannot be read ({exc})") from None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return any(c.sha == ancestor for c in self.walk(descendant))

    # ----------------------------------------------------------------- objects

    def get_object(self, sha: bytes) -> ShaFile | RawTree:
        """Object ``sha`` (hex) as dulwich holds it (a batch's tree: as its bytes)."""
        if self._pending is not None:
            pending = self._pending.get(sha)
            if pending is not None:
                return pending
        kind, raw = self._read(sha)
        try:
            return ShaFile.from_raw_string(kind, raw, sha=sha)  # checked by _read
        except DULWICH_UNREADABLE as exc:
            raise Unreadable(f"object {sha.decode()} does not parse ({exc})") from None

    def _read(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body) of the stored object ``sha`` (hex), checked against its id.
        The object layer reads it (``gitkb.vcs.objects``); what it leaves (an object
        it finds nowhere, an unusual pack) dulwich reads, never a file it found damaged."""
        text = sha.decode("ascii", "replace")
        try:
            kind, raw = self._files.read(text)
        except Unreadable as exc:
            if not exc.elsewhere:
                raise
            try:
                kind, raw = self._objects.get_raw(sha)
            except DULWICH_UNREADABLE:
                raise exc from None
            if kind not in TYPE_NAMES:
                raise exc from None
        if _object_id(kind, raw) != text:
            raise Unreadable(
                f"object {text} in {self.git_dir} is damaged: its bytes have another id; "
                "`git fsck` names it"
            )
        return kind, raw

    def add_object(self, obj: ShaFile | RawTree) -> None:
        if self._pending is not None:
            self._pending[obj.id] = obj
        else:
            assert isinstance(obj, ShaFile)
            self._objects.add_object(obj)

    # ----------------------------------------------------------------- writing

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Objects written inside reach the disk together, as one pack, when the block
        ends without error: many commits cost two files instead of ten each.
        Refs must only be moved after the block."""
        self._pending, self._delta_bases, self._deflated = {}, {}, {}
        # Read once for the batch's commits (the environment lookups cost more than a commit).
        self._committer, self._signer = identity(), self.signer()
        try:
            yield
            if self._pending:
                pack_dir = Path(self._objects.path) / "pack"
                write_pack(pack_dir, self._pending.values(), self._delta_bases, self._deflated)
                self._objects._update_pack_cache()  # dulwich has no public way to see a pack
        finally:
            self._pending, self._deflated, self._committer, self._signer = None, {}, None, None

    def write_blob(self, data: bytes, ahead: Mapping[bytes, bytes] | None = None) -> str:
        """Write one blob; ``ahead``: zlib streams (``deflate``) already made of some
        bytes, by blob id, taken for this blob when its id is theirs."""
        blob = Blob.from_string(data)
        self.add_object(blob)
        if self._pending is not None:
            # Deflated once, for the pack and for whoever else keeps it (the index cache
            # keeps file bytes in the same zlib form: ``deflated``).
            known = ahead.get(blob.id) if ahead else None
            self._deflated[blob.id] = known or deflate(data)
        return blob.id.decode()

    def deflated(self, sha: str) -> bytes | None:
        """The zlib stream of a blob written in the open batch (``deflate`` of its
        bytes), or None."""
        return self._deflated.get(_b(sha))

    def _edit_tree(
        self, tree_id: bytes | None, edits: dict[tuple[bytes, ...], bytes | None]
    ) -> bytes | None:
        """Apply edits (path parts -> blob id, or None to delete) to one tree; None when empty
        (``gitkb.vcs.pending.edit_tree``)."""
        return edit_tree(self._tree_rows, self._store_tree, tree_id, edits)

    def _store_tree(self, written: RawTree, replaced: bytes | None) -> None:
        if self._pending is None:
            self.add_object(written.parsed())
            return
        if replaced is not None and replaced in self._pending:
            # the folder's version before this commit: the new one is a delta of it
            self._delta_bases.setdefault(written.id, replaced)
        self.add_object(written)

    def _tree_rows(self, tree_id: bytes) -> list[Row]:
        """A tree's entries as (sort key, raw entry bytes), in git's order."""
        held = self._pending.get(tree_id) if self._pending is not None else None
        if isinstance(held, RawTree):
            return held.rows
        if held is None:
            # The stored bytes, checked against the id, split without building a dulwich
            # Tree (parsing it and serializing it back cost more than the edit).
            kind, raw = self._read(tree_id)
            if kind != TREE:
                raise Unreadable(f"{tree_id.decode()} is not a tree")
            return rows_of(raw)
        return rows_of(held.as_raw_string())

    def _blob_edits(
        self, edits: Mapping[str, bytes | None], ahead: Mapping[bytes, bytes] | None = None
    ) -> dict[tuple[bytes, ...], bytes | None]:
        """Slash paths -> new bytes (None: delete) as path parts -> written blob ids."""
        blob_edits: dict[tuple[bytes, ...], bytes | None] = {}
        for path, data in edits.items():
            parts = tuple(_b(p) for p in path.split("/") if p)
            if not parts or any(p in (b".", b"..") for p in parts):
                raise GitkbError(f"refusing to write outside the tree: {path!r}")
            blob_edits[parts] = None if data is None else _b(self.write_blob(data, ahead))
        return blob_edits

    def _empty_tree(self) -> bytes:
        empty = Tree()
        self.add_object(empty)
        return empty.id

    def write_commit(
        self,
        parent: str | None,
        edits: Mapping[str, bytes | None],
        message: str,
        author: str | None = None,
        when: int | None = None,
        deflated: Mapping[bytes, bytes] | None = None,
    ) -> str:
        """Write the objects of one commit (no ref moves): ``parent``'s tree with ``edits``.

        ``edits`` maps a slash path to new file bytes, or to None to delete it;
        ``deflated``: zlib streams of some of those bytes made ahead, by blob id.
        """
        blob_edits = self._blob_edits(edits, deflated)
        base_tree = self.tree_of(parent) if parent else None
        tree_id = self._edit_tree(base_tree, blob_edits) or self._empty_tree()
        committer = self._committer or identity()
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
        return self._add_commit(commit)

    def rewrite_commit(
        self, sha: str, parents: list[str], edits: Mapping[str, bytes | None], message: str
    ) -> str:
        """Write a copy of commit ``sha`` with other ``parents``, ``edits`` applied to its own
        tree and another ``message``; authors, committers and their dates stay."""
        original = self.get_object(_b(sha))
        if not isinstance(original, Commit):
            raise GitkbError(f"{sha} is a {original.type_name.decode()}, not a commit")
        blob_edits = self._blob_edits(edits)
        tree_id = self._edit_tree(original.tree, blob_edits) if blob_edits else original.tree
        commit = Commit()
        commit.tree = tree_id or self._empty_tree()
        commit.parents = [_b(p) for p in parents]
        for name in ("author", "committer", "author_time", "commit_time", "author_timezone",
                     "commit_timezone", "encoding"):  # fmt: skip
            setattr(commit, name, getattr(original, name))
        commit.message = _b(message)
        return self._add_commit(commit)

    def signer(self) -> signing.Signer | None:
        """Who signs this repository's commits, as git's configuration says (None: unsigned)."""
        return signing.settings_of(self._repo.get_config_stack()).signer()

    def _add_commit(self, commit: Commit) -> str:
        """Store ``commit``, signed first where git's configuration asks for it."""
        signer = self._signer if self._pending is not None else self.signer()
        if signer is not None:
            commit.gpgsig = signer.sign(commit.as_raw_string()).rstrip(b"\n")
        self.add_object(commit)
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
