"""The one write path of a store: ``Change`` objects become commits on ``main``.

A write takes the store's writer lock, builds each change against the store as it
stands (a ``StoreView`` that includes the changes before it), writes one commit per
change without a work tree (a chunk of commits as one pack), then moves ``main``
by compare-and-swap and keeps the index cache in the same step: every admission
is wholly there (record, commit, cache) or not there at all. If ``main`` moved
meanwhile, the chunk is built again on the new tip.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import tomli_w

from gitkb import layout
from gitkb.access.policy import policy_of, require_signer
from gitkb.errors import AdmissionRefused, GitkbError, RefMoved, os_reason
from gitkb.record.index import INDEX_PATH
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.cache.rows import RowValues
from gitkb.store.view import StoreView
from gitkb.util import log
from gitkb.vcs import worktree
from gitkb.vcs.repository import Repository
from gitkb.vcs.trailers import format_message, parse_trailers

logger = log.logger(__name__)

_CAS_ATTEMPTS = 3
_CHUNK = 1000  # commits per pack and per move of main


class WritableStore(Protocol):
    """What the write path uses of a store (``gitkb.store.Store`` is one)."""

    cache: IndexCache

    @property
    def repo(self) -> Repository: ...
    @property
    def location(self) -> Path: ...
    @property
    def tip(self) -> str: ...
    @property
    def format(self) -> str: ...
    def view(self, commit: str | None = None) -> StoreView: ...
    def config(self, commit: str | None = None) -> dict: ...
    def upgrade_change(self, view: StoreView) -> Change: ...
    def write_work_tree_index(self, force: bool = False) -> str | None: ...
    def require_signing(self) -> None: ...


@dataclass
class Change:
    """One commit's worth of store edits: ``edits`` maps a path to new bytes (None
    deletes it). A change without edits writes nothing; ``note`` says why."""

    action: str
    record_id: str
    edits: dict[str, bytes | None]
    path: str | None = None
    body: str = ""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""
    gates: str = ""
    # The records of ``edits`` as the builder parsed them from those very bytes (path ->
    # data), so the cache does not parse them again.
    parsed: dict[str, dict] = field(default_factory=dict)
    # Files of ``edits`` worked out ahead (path -> Prepared), by a bulk admission's worker.
    prepared: dict[str, Prepared] = field(default_factory=dict)


@dataclass(frozen=True)
class Prepared:
    """A file's bytes as written, worked out ahead: its blob id, the blob's zlib stream as a
    pack holds it (``gitkb.vcs.objects.pack_writer.deflate``) and its cache row
    (``rows.row_values``).
    Each is taken only where the blob id the writer computes is this one."""

    blob: str
    deflated: bytes
    row: RowValues


@dataclass
class Admission:
    """What one change did; ``commit`` is None when nothing needed writing."""

    action: str
    record_id: str
    path: str | None
    commit: str | None
    note: str = ""
    gates: str = ""

    def as_json(self) -> dict:
        return dict(self.__dict__)


Builder = Callable[[StoreView], Change]


def require_signing(store: WritableStore) -> None:
    """Refuse, before any work, to write into a store that requires signed commits when
    git is not set to sign them ([access] require_signed)."""
    policy = policy_of(store.config())
    if policy.require_signed:
        require_signer(policy, store.repo.signer(), str(store.location))


def message(change: Change) -> str:
    """``kb <action> <id>``, the body, then one pure trailer block."""
    return format_message(
        f"kb {change.action} {change.record_id}",
        change.body,
        [("KB-Action", change.action), ("KB-Record", change.record_id), *change.trailers],
    )


def message_problems(text: str) -> list[tuple[str, str]]:
    """(record-id, what) for a message whose subject is an admission (``kb <action> <id>``)
    but whose final trailer block does not say the same action and record."""
    words = text.split("\n", 1)[0].split()
    if len(words) != 3 or words[0] != "kb":
        return []
    _, action, record_id = words
    trailers = parse_trailers(text)
    if not trailers:
        return [
            (record_id, f"subject 'kb {action} {record_id}' needs a final trailer block "
             "with KB-Action and KB-Record")
        ]  # fmt: skip
    problems = []
    actions = [v for k, v in trailers if k == "KB-Action"]
    if actions != [action]:
        problems.append((record_id, f"KB-Action is {_names(actions)}, the subject says {action}"))
    records = [v for k, v in trailers if k == "KB-Record"]
    # An init commit names the store in its subject and carries no KB-Record.
    if action != "init" and records != [record_id]:
        problems.append(
            (record_id, f"KB-Record is {_names(records)}, the subject names {record_id}")
        )
    return problems


def _names(values: Iterable[str]) -> str:
    values = sorted(set(values))
    return ", ".join(values) if values else "nothing"


def write(store: WritableStore, builds: list[Builder], on_refusal: str = "stop") -> list[Admission]:
    """Apply ``builds`` in order under the writer lock, one commit each. A builder's view
    lists the admissions made before it (``view.admitted``), e.g. for a closing report.

    ``on_refusal`` "stop": a refusal lands the changes before it, then raises with
    ``admitted`` set; "skip": the refused change is reported as a ``refused``
    admission (its note says why) and the rest go on.
    """
    admissions: list[Admission] = []
    if not builds:
        return admissions
    try:
        with _writer_lock(store):
            pending = list(builds)
            if store.format == layout.FORMAT_1 and store.upgrade_change not in pending:
                logger.warning("%s uses store format 1 (a committed index): upgrading it first "
                            "(one kb upgrade commit)", store.location)  # fmt: skip
                pending.insert(0, store.upgrade_change)
            try:
                for start in range(0, len(pending), _CHUNK):
                    chunk = pending[start : start + _CHUNK]
                    admissions += _write_chunk(store, chunk, on_refusal, admissions)
            except GitkbError as exc:
                exc.admitted = admissions + getattr(exc, "admitted", [])
                raise
            finally:
                if any(a.commit for a in admissions):
                    store.write_work_tree_index()
    except OSError as exc:
        # A read-only store, a full disk: main has not moved past ``admissions``.
        error = GitkbError(f"{store.location}: cannot write to the store ({os_reason(exc)})")
        error.admitted = admissions
        raise error from None
    return admissions


def rewrite(store: WritableStore, build: Callable[[str], tuple[str, set[str]]]) -> tuple[str, str]:
    """Replace main by a rewrite of it, under the writer lock: ``build(tip)`` writes the new
    commits and returns the new tip and the paths it changed; main then moves by
    compare-and-swap (``git kb renumber`` rewrites commits not yet pushed, nothing else
    rewrites history). Returns (old tip, new tip)."""
    repo = store.repo
    try:
        with _writer_lock(store):
            tip = store.tip
            with repo.batch():
                new, touched = build(tip)
            repo.update_ref(layout.BRANCH, tip, new, reason="gitkb: rewrite")
            _sync_work_tree(store, new, touched, [])
            store.write_work_tree_index()
    except OSError as exc:
        raise GitkbError(
            f"{store.location}: cannot write to the store ({os_reason(exc)})"
        ) from None
    return tip, new


@contextlib.contextmanager
def _writer_lock(store: WritableStore) -> Iterator[None]:
    """The store's writer lock, held once the writer may sign as the store requires (no
    work before that refusal), with a work tree an interrupted writer left repaired."""
    store.require_signing()
    with worktree.writer_lock(store.repo) as recovered:
        if recovered:
            worktree.repair_work_tree(store.repo, layout.BRANCH)
        yield


def _write_chunk(
    store: WritableStore, chunk: list[Builder], on_refusal: str, earlier: list[Admission]
) -> list[Admission]:
    repo, cache = store.repo, store.cache
    for attempt in range(_CAS_ATTEMPTS):
        start_tip = tip = store.tip
        done: list[Admission] = []
        touched: set[str] = set()
        refusal: GitkbError | None = None
        try:
            with cache.snapshot(start_tip):
                with repo.batch():
                    for build in chunk:
                        view = store.view(tip)
                        view.admitted = earlier + done
                        try:
                            change = build(view)
                        except AdmissionRefused as exc:
                            if on_refusal == "stop":
                                refusal = exc
                                break
                            done.append(
                                Admission("refused", exc.record_id, None, None, exc.message)
                            )
                            continue
                        except GitkbError as exc:
                            refusal = exc
                            break
                        if change.edits:
                            ahead = change.prepared
                            tip = repo.write_commit(
                                tip,
                                change.edits,
                                message(change),
                                deflated={p.blob.encode(): p.deflated for p in ahead.values()},
                            )
                            touched.update(change.edits)
                            rows = {path: p.row for path, p in ahead.items()}
                            cache.apply_edits(change.edits, tip, change.parsed, repo.deflated, rows)
                        done.append(
                            Admission(
                                change.action,
                                change.record_id,
                                change.path,
                                tip if change.edits else None,
                                change.note,
                                change.gates,
                            )
                        )
                if tip != start_tip:
                    # Inside the cache's transaction: the cache keeps the new tree only if
                    # main really moved there.
                    repo.update_ref(layout.BRANCH, start_tip, tip, reason="gitkb: admit")
        except RefMoved:
            if attempt + 1 == _CAS_ATTEMPTS:
                raise
            continue
        if tip != start_tip:
            _sync_work_tree(store, tip, touched, done)
        if refusal is not None:
            refusal.admitted = done
            raise refusal
        return done
    raise AssertionError("unreachable")


def _sync_work_tree(
    store: WritableStore, tip: str, touched: set[str], done: list[Admission]
) -> None:
    try:
        worktree.sync_work_tree(store.repo, layout.BRANCH, tip, sorted(touched))
    except OSError as exc:
        error = GitkbError(
            f"{store.location}: main is at {tip[:12]}, but the work tree could not "
            f"follow ({os_reason(exc)}); once writable, `git checkout HEAD -- .` "
            "brings it up to date"
        )
        error.admitted = done
        raise error from None


def upgrade_change(store: WritableStore, view: StoreView) -> Change:
    """Store format 1 -> 2: records/index.json leaves history, gitkb.toml says so."""
    config = store.config(view.tip)
    config.setdefault("store", {})["format"] = layout.FORMAT_2
    ignore = store.repo.read(view.tip, layout.GITIGNORE_PATH) or b""
    line = f"/{layout.WORK_TREE_INDEX}\n".encode()
    edits: dict[str, bytes | None] = {
        INDEX_PATH: None,
        layout.CONFIG_PATH: tomli_w.dumps(config).encode(),
    }
    if line not in ignore.splitlines(keepends=True):
        edits[layout.GITIGNORE_PATH] = ignore + (b"\n" if ignore[-1:] not in (b"", b"\n")
                                                 else b"") + line  # fmt: skip
    return Change(
        "upgrade",
        layout.FORMAT_2,
        edits,
        body="Store format 2: the index is a cache under the git directory, not history "
        "(git kb export writes records/index.json for GPU-wiki readers).",
        trailers=[("KB-Store-Format", layout.FORMAT_2)],
    )
