"""The store: a git repository whose ``main`` commits are record admissions.

Reads go through the index cache (``cache``) at ``main``'s records tree; every
write goes through the one write path (``writer``: ``Change`` + ``Store.commit``)
and every admission through the one policy (``admission``).
"""

from __future__ import annotations

import builtins
import os
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar, overload

from gitkb import layout
from gitkb import record as rec
from gitkb.errors import GitkbError, NotARepository, NotAStore, writing
from gitkb.record.index import INDEX_PATH, Index
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.cache.source import Lie, RepoOpener
from gitkb.store.view import StoreView
from gitkb.util.files import atomic_write
from gitkb.vcs import plain
from gitkb.vcs.objects import Unreadable
from gitkb.vcs.tree_ids import TreeIds

# The write path, the gates and the VCS layer's dulwich side load when a method needs them
# (each loads dulwich): a reader the cache answers (query, resolve, show) starts without.
if TYPE_CHECKING:
    from gitkb.gates import Finding
    from gitkb.store.request import AdmitRequest
    from gitkb.store.writer import Admission, Builder, Change
    from gitkb.vcs.repository import Repository

T = TypeVar("T")


class Store:
    def __init__(
        self,
        location: str | os.PathLike[str],
        git_dir: str | os.PathLike[str],
        repo: Repository | None = None,
    ) -> None:
        self._location = os.fspath(location)
        self._git_dir = os.fspath(git_dir)
        self._opener = RepoOpener(self._location, repo)
        self.cache = IndexCache(self._git_dir, self._opener)
        self.tree_ids = TreeIds(self._git_dir)

    @property
    def location(self) -> Path:
        """Where the store is: its work tree, or the bare repository."""
        return Path(self._location)

    @property
    def where(self) -> str:
        """``location`` as text, as messages and answers name it."""
        return self._location

    @property
    def git_dir(self) -> Path:
        return Path(self._git_dir)

    @property
    def repo(self) -> Repository:
        return self._opener()

    @property
    def opener(self) -> RepoOpener:
        """Opens the repository on first use (a reader the cache answers never does)."""
        return self._opener

    # ----------------------------------------------------------------- opening

    # what ``open`` answers for each ``missing_ok``
    @overload
    @classmethod
    def open(cls, path: str | os.PathLike = ..., missing_ok: Literal[False] = ...) -> Store: ...

    @overload
    @classmethod
    def open(cls, path: str | os.PathLike, missing_ok: bool) -> Store | None: ...

    @classmethod
    def open(cls, path: str | os.PathLike = ".", missing_ok: bool = False) -> Store | None:
        """The store at ``path`` (a work tree or a bare repository): the one way gitkb opens
        a store, with the one set of messages (``NotAStore`` names the path and what it
        lacks). ``missing_ok``: None where ``path`` holds no store at all; a store that is
        there but damaged is an error all the same."""
        try:
            return cls._open(os.fspath(path))
        except NotAStore:
            if missing_ok:
                return None
            raise

    @classmethod
    def _open(cls, location: str) -> Store:
        git_dir = plain.git_dir_of(location)
        if git_dir is not None:
            # The quick path: the cache already holds the commit main names, and that
            # commit's gitkb.toml makes it a store.
            store = cls(location, git_dir)
            main = plain.read_ref(git_dir, layout.BRANCH)
            if main is not None and store.cache.held_commit() == main:
                if _store_table(store.cache.held_file(layout.CONFIG_PATH)):
                    return store
        from gitkb.vcs.repository import Repository

        try:
            repo = Repository.open(location)
        except NotARepository as exc:
            raise NotAStore(f"{location} is not a gitkb store: {exc.message}") from None
        tip = repo.resolve(layout.BRANCH)
        if tip is None:
            raise NotAStore(f"{location} is not a gitkb store: it has no main branch")
        try:
            config = repo.blob_sha(tip, layout.CONFIG_PATH)
        except (Unreadable, OSError) as exc:
            raise GitkbError(
                f"{location}: main ({tip[:12]}) cannot be read: the repository is damaged "
                f"({type(exc).__name__}: {exc})"
            ) from None
        if config is None:
            raise NotAStore(f"{location} is not a gitkb store: no {layout.CONFIG_PATH} on main")
        store = cls(location, repo.git_dir, repo)
        if not isinstance(store.config(tip).get("store"), dict):
            raise NotAStore(
                f"{location} is not a gitkb store: {layout.CONFIG_PATH} has no [store] table"
            )
        return store

    @classmethod
    def init(cls, path: str | os.PathLike, bare: bool = False, name: str | None = None) -> Store:
        location = Path(path)
        if location.is_dir() and any(location.iterdir()):
            what = "a git repository" if (location / ".git").exists() else "files"
            raise GitkbError(f"{location} already holds {what}; a store starts in a new folder")
        if location.exists() and not location.is_dir():
            raise GitkbError(f"{location} is a file; a store starts in a new folder")
        store_name = name or location.resolve().name
        if "\n" in store_name or not store_name.strip():
            raise GitkbError(f"store name {store_name!r} must be one non-empty line", 2)
        # Creating a repository is dulwich's work (gitkb.vcs.repository).
        from gitkb.store.create import create_repository

        with writing(location):
            repo = create_repository(location, bare, store_name)
        return cls(location, repo.git_dir, repo)

    # ----------------------------------------------------------------- reading

    @property
    def tip(self) -> str:
        if self._opener.loaded():
            tip = self.repo.resolve(layout.BRANCH)
        else:
            tip = plain.read_ref(self._git_dir, layout.BRANCH) or self.repo.resolve(layout.BRANCH)
        if tip is None:
            raise NotAStore(f"{self._location}: the main branch disappeared")
        return tip

    @property
    def format(self) -> str:
        """``gitkb-1`` while ``main`` still commits records/index.json, else ``gitkb-2``."""
        if self.repo.blob_sha(self.tip, INDEX_PATH) is not None:
            return layout.FORMAT_1
        return layout.FORMAT_2

    def config(self, commit: str | None = None) -> dict:
        commit = commit or self.tip
        if not self._opener.loaded() and self.cache.held_commit() == commit:
            raw = self.cache.held_file(layout.CONFIG_PATH)
        else:
            raw = self.repo.read(commit, layout.CONFIG_PATH)

        try:
            return tomllib.loads((raw or b"").decode())
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise GitkbError(
                f"{self.location}: {layout.CONFIG_PATH} on main is not valid TOML ({exc}); "
                "fix it with a commit"
            ) from None

    def view(self, commit: str | None = None) -> StoreView:
        """The store at ``commit`` (default: main) as gates and readers see it."""
        return StoreView(self._opener, self.cache, commit or self.tip, location=self._location,
                         tree_ids=self.tree_ids)  # fmt: skip

    def asked(self, ask: Callable[[], T]) -> T:
        """``ask()``'s answer, asked again over a rebuilt cache when it caught the cache
        lying (``StoreView.read_checked``: a row main's tree does not hold)."""
        try:
            return ask()
        except Lie:
            self.cache.rebuild_at(self.tip)
            return ask()

    def read_record(self, record_id: str, commit: str | None = None) -> rec.RecordFile:
        return self.view(commit).read_record(record_id)

    def record_files(self, commit: str | None = None) -> Iterator[rec.RecordFile]:
        """Every record file at ``commit``, read from the tree (not the cache); one whose
        object cannot be read comes as a file that does not read, saying why."""
        commit = commit or self.tip
        for path, sha in self.repo.list_tree(commit, rec.RECORDS_DIR):
            if not rec.is_record_path(path):
                continue
            try:
                raw = self.repo.blob(sha)
            except (Unreadable, OSError) as exc:
                yield rec.RecordFile(path, b"", None, f"its object {sha} cannot be read ({exc})")
                continue
            yield rec.load(path, raw)

    def list(self, **filters: str | None) -> list[dict]:
        """Index entries whose type/vendor/arch/dsl/operator family equal the given filters."""
        scope = {
            "type": filters.get("type"),
            "vendor": filters.get("vendor"),
            "arch": filters.get("arch"),
            "dsl": filters.get("dsl"),
            "family": filters.get("operator"),
        }
        wanted = {k: v for k, v in scope.items() if v}
        view = self.view()
        if not view.records_agree():
            # A row main's tree does not hold, or a record it holds without a row: the
            # cache is rebuilt before anything is listed.
            self.cache.rebuild_at(view.tip)
        return view.scoped(**wanted)

    def log(self, record_id: str | None = None) -> builtins.list[dict]:
        """The admission history, newest first, read from commit trailers."""
        out = []
        for info in self.repo.walk(self.tip):
            trailers: dict[str, str] = {}
            for key, value in info.trailers:
                trailers.setdefault(key, value)
            if "KB-Action" not in trailers:
                continue
            names = {
                trailers.get("KB-Record"),
                trailers.get("KB-Target"),
                trailers.get("KB-Confirmed-By"),
            }
            if record_id and record_id not in names:
                continue
            out.append(
                {
                    "commit": info.sha,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info.commit_time)),
                    "subject": info.subject,
                    "action": trailers["KB-Action"],
                    "trailers": trailers,
                }
            )
        return out

    def match(self, record: dict) -> dict:
        """Every same-scope candidate and every exact episode_key match; decides nothing."""
        scope = rec.scope_of(record)
        view = self.view()
        entries = view.scoped(
            vendor=scope.get("vendor") or None,
            arch=scope.get("arch") or None,
            family=scope.get("operator_family") or None,
        )
        dsl = scope.get("dsl")
        candidates = []
        for entry in entries:
            if dsl and dsl != "any" and rec.scope_of(entry).get("dsl") not in (dsl, "any"):
                continue
            loaded = view.read_record(entry["id"])
            if loaded.data is not None:
                candidates.append(_summary(loaded.data))
        key = record.get("episode_key")
        return {
            "status": "ok",
            "incoming": _summary(record),
            "candidates_count": len(candidates),
            "episode_key_matches": [c["id"] for c in candidates if key and c["episode_key"] == key],
            "candidates": candidates,
        }

    # ----------------------------------------------------------------- writing

    def check_record(
        self, record: dict, path: str, action: str = "insert"
    ) -> tuple[str, builtins.list[Finding]]:
        """The record-level gates on one record about to be admitted as ``action``."""
        from gitkb.store import admission

        return admission.check_record(self.view(), record, path, action)

    def require_signing(self) -> None:
        """Refuse, before any work, to write into a store that requires signed commits
        when git is not set to sign them ([access] require_signed)."""
        from gitkb.store import writer

        writer.require_signing(self)

    def commit(
        self, builds: builtins.list[Builder], on_refusal: str = "stop"
    ) -> builtins.list[Admission]:
        """The one write path: each builder's ``Change`` becomes one commit (see writer)."""
        from gitkb.store import writer

        return writer.write(self, builds, on_refusal)

    def admit(self, raw: bytes, action: str = "insert", target: str | None = None,
              source: str = "<record>", trace: str | None = None,
              trace_commit: str | None = None, body: str = "") -> Admission:  # fmt: skip
        """Admit one record file's bytes as ``insert``, ``confirm`` or ``conflict``: one commit."""
        from gitkb.store import admission

        request = admission.AdmitRequest(raw, action, target, source, trace, trace_commit, body)
        return self.admit_many([request])[0]

    def admit_many(
        self, requests: builtins.list[AdmitRequest], on_refusal: str = "stop"
    ) -> builtins.list[Admission]:
        """Admit records in order, one commit each (``gitkb.store.admission.admit_many``)."""
        from gitkb.store import admission

        return admission.admit_many(self, requests, on_refusal)

    def copy_trace(self, source: str | os.PathLike, head: str, ref: str) -> str:
        """Copy a trace's commits under ``ref`` (create or fast-forward) under the writer
        lock, so a writer killed midway leaves a ref lock the next writer recovers."""
        from gitkb.vcs import worktree

        with worktree.writer_lock(self.repo):
            return self.repo.fetch_into(source, head, ref)

    # ----------------------------------------------------------------- format

    def upgrade_change(self, view: StoreView) -> Change:
        """Store format 1 -> 2 (``writer.upgrade_change``): the first write to a format-1
        store makes it, and so does ``upgrade``."""
        from gitkb.store import writer

        return writer.upgrade_change(self, view)

    def upgrade(self) -> Admission:
        """One ``kb upgrade`` commit when the store is format 1; nothing otherwise."""
        from gitkb.store.writer import Admission

        if self.format == layout.FORMAT_2:
            return Admission("upgrade", layout.FORMAT_2, None, None, "already store format 2")
        return self.commit([self.upgrade_change])[0]

    # ----------------------------------------------------------------- the index cache

    def reindex(self) -> dict:
        """Rebuild the index cache from the records; with a work tree, also write its
        git-ignored ``records/index.json`` for tools that read the folder."""
        with self.cache.snapshot(self.tip):
            self.cache.rebuild()
            count = self.cache.count()
            unindexed = [r.path for r in self.cache.rows("WHERE entry IS NULL OR id IS NULL")]
        written = self.write_work_tree_index(force=True)
        return {"records": count, "unindexed": unindexed, "work_tree_index": written}

    def index_file(self, commit: str | None = None) -> bytes:
        """The GPU-wiki ``records/index.json`` of the records at ``commit``."""
        index = Index()
        for entry in self.view(commit).entries():
            index.put(entry)
        return index.dumps()

    def write_work_tree_index(self, force: bool = False) -> str | None:
        """Refresh the work tree's generated ``records/index.json`` (when ``force``, or when
        the user keeps one); the path written, or None."""
        work_tree = self.repo.work_tree
        if work_tree is None or self.format == layout.FORMAT_1:
            return None
        target = work_tree / layout.WORK_TREE_INDEX
        if not force and not target.is_file():
            return None
        atomic_write(target, self.index_file())
        return str(target)


def _store_table(config: bytes | None) -> bool:
    """Whether ``gitkb.toml`` bytes hold a ``[store]`` table."""
    try:
        return isinstance(tomllib.loads((config or b"").decode()).get("store"), dict)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def _summary(record: dict) -> dict:
    from gitkb.store.admission import gain_sign

    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    problem = payload.get("problem") if isinstance(payload.get("problem"), dict) else {}
    gain = rec.dig(record, "worth", "gain")
    gain = gain if isinstance(gain, dict) else {}
    return {
        "id": record.get("id"),
        "type": record.get("type"),
        "episode_key": record.get("episode_key"),
        "change": payload.get("change"),
        "mechanism": payload.get("mechanism"),
        "goal": payload.get("goal"),
        "observed_symptom": problem.get("observed_symptom"),
        "operator": problem.get("operator"),
        "bottleneck": problem.get("bottleneck"),
        "shape_contract": problem.get("shape_contract"),
        "gain_direction": gain_sign(record),
        "gain_pct": gain.get("pct"),
        "gain_basis": gain.get("basis"),
    }
