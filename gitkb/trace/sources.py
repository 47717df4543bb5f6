"""Where the trace gates find a record's trace, and the packets they judge it by.

``StoreTraces``: the store's copies under ``refs/kb/traces/<label>`` (admission, hooks,
``git kb validate`` of a store), rebuilt with the options the mining run recorded beside
the records (``traces/<label>.json``). ``TraceRepo``: one trace repository under its label
(``git kb validate DIR --trace PATH``, and a mining run judging its own records against
the very packets it distilled them from). Both build packets with the same function and
the environment's denylist, so a record meets the same scrubbed packet everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from gitkb import layout
from gitkb.errors import GitkbError, NotARepository
from gitkb.record.values import mapping
from gitkb.trace import TraceError
from gitkb.trace.files import JsonProblem, parse_json
from gitkb.trace.options import TraceOptions
from gitkb.trace.packets import Packet, build_packets
from gitkb.vcs.repository import Repository

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_STORE_CACHE: dict[tuple[str, str, str, str], list[Packet]] = {}


def open_trace(path: str | Path) -> tuple[Repository, str, str]:
    """(repository, HEAD commit, default label) of a trace; one clear error when unusable.

    The default label is the one the trace states (``solution.json`` ``trace_label`` at
    HEAD, written by ``git kb optimize`` and named in its KB-Trace trailer), else the
    trace folder's name.
    """
    location = Path(path)
    try:
        repo = Repository.open(location)
    except NotARepository:
        raise TraceError(f"{location}: not a git repository") from None
    head = repo.resolve("HEAD")
    if head is None:
        raise TraceError(f"{location}: the repository has no commits")
    if repo.object_type(head) != "commit":
        raise TraceError(f"{location}: HEAD is not a commit")
    stated = stated_label(repo, head)
    if stated is not None:
        return repo, head, stated
    name = location.resolve().name
    return repo, head, name.removesuffix(".git") or name


def usable_label(label: str) -> bool:
    """Whether ``label`` can name ``refs/kb/traces/<label>`` and a report folder."""
    return bool(_LABEL.fullmatch(label)) and ".." not in label and not label.endswith(".lock")


def read_options(raw: bytes | None) -> TraceOptions:
    """The options a ``traces/<label>.json`` records (none, or unreadable: defaults)."""
    if raw is None:
        return TraceOptions()
    try:
        return TraceOptions.from_stored(parse_json(raw))
    except JsonProblem:
        return TraceOptions()


class RepositoryHolder(Protocol):
    """What ``StoreTraces`` reads of a store view (``gitkb.store.view.StoreView`` is one;
    this layer sits below the store)."""

    @property
    def repo(self) -> Repository: ...
    def read_file(self, path: str) -> bytes | None: ...


class StoreTraces:
    """The traces a store holds; ``view`` is a store view (a pushed commit's, in a hook)."""

    def __init__(self, view: RepositoryHolder) -> None:
        self.view = view

    def tip(self, label: str) -> tuple[str | None, str]:
        ref = layout.trace_ref(label)
        tip = self.view.repo.resolve(ref)
        if tip is None:
            return None, f"trace {label} is not in the store: mine it or push {ref}"
        return tip, ""

    def repo(self, label: str) -> Repository:
        return self.view.repo

    def commits(self, label: str) -> set[str]:
        """Every commit reachable from the trace's tip."""
        tip, _ = self.tip(label)
        return {c.sha for c in self.view.repo.walk(tip)} if tip else set()

    def options(self, label: str) -> TraceOptions:
        return read_options(self.view.read_file(layout.TRACE_OPTIONS_PATH.format(label=label)))

    def packets(self, label: str) -> list[Packet]:
        tip, problem = self.tip(label)
        if tip is None:
            raise GitkbError(problem)
        options = self.options(label)
        key = (str(self.view.repo.git_dir), label, tip, repr(options))
        if key not in _STORE_CACHE:
            _STORE_CACHE[key] = build_packets(self.view.repo, tip, label, options)
        return _STORE_CACHE[key]


class TraceRepo:
    """One trace repository under one label. ``packets`` given: those are the packets
    (a mining run's own); else they are built on first use with ``options``."""

    def __init__(
        self,
        repo: Repository,
        tip: str,
        label: str,
        options: TraceOptions | None = None,
        packets: list[Packet] | None = None,
        commits: frozenset[str] | None = None,
    ) -> None:
        self._repo, self._tip, self.label = repo, tip, label
        self.options = options or TraceOptions()
        self._packets = packets
        self._commits = commits

    @classmethod
    def open(
        cls, path: str | Path, label: str | None = None, options: TraceOptions | None = None
    ) -> TraceRepo:
        repo, head, default = open_trace(path)
        return cls(repo, head, label or default, options)

    def tip(self, label: str) -> tuple[str | None, str]:
        if label != self.label:
            return None, f"trace {label} is not the trace given ({self.label})"
        return self._tip, ""

    def repo(self, label: str) -> Repository:
        return self._repo

    def commits(self, label: str) -> set[str] | frozenset[str]:
        """Every commit reachable from the trace's tip (known to a mining run already)."""
        if self._commits is None:
            self._commits = frozenset(c.sha for c in self._repo.walk(self._tip))
        return self._commits

    def packets(self, label: str) -> list[Packet]:
        tip, problem = self.tip(label)
        if tip is None:
            raise GitkbError(problem)
        if self._packets is None:
            self._packets = build_packets(self._repo, tip, label, self.options)
        return self._packets


def stated_label(repo: Repository, head: str) -> str | None:
    """The label a trace states for itself (``solution.json`` ``trace_label``), if usable."""
    raw = repo.read(head, "solution.json")
    try:
        label = mapping(parse_json(raw)).get("trace_label") if raw else None
    except JsonProblem:
        return None
    if isinstance(label, str) and usable_label(label):
        return label
    return None
