"""Ingest: a trace's commits and committed files -> one row per version (docs/trace-format.md,
rules 1-10).

Everything is read from the commits reachable from ``tip`` through the VCS
layer, so a bare clone, a checkout and the store's ``refs/kb/traces/<label>``
copy all ingest the same. Bad input never raises here: a version whose files
cannot be read degrades (no numbers) and the reason is kept on the row.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from gitkb.record.values import mapping, stripped_text
from gitkb.trace import TraceError
from gitkb.trace.captures import Capture, read_captures
from gitkb.trace.files import MAX_FILE_BYTES, TraceFiles
from gitkb.trace.hardware import resolve_hardware
from gitkb.trace.journals import Journal, promotion_journal, supervisor_journals
from gitkb.trace.memory import VersionRow, read_memory
from gitkb.trace.messages import (
    EPISODE,
    VERSION_PREFIX,
    body_of,
    deadend_streak,
    episode_of,
    is_reverted,
    long_horizon_commit,
    outcome_episode,
    parse_deadends,
)
from gitkb.trace.naming import entry_point, operator_slug, sniff_dsl, workload_family
from gitkb.trace.options import DEFAULT_HARNESS, DEFAULT_NON_TARGET_KERNELS, TraceOptions
from gitkb.trace.scrub import Scrubber
from gitkb.vcs import treediff
from gitkb.vcs.repository import Repository

_MEMORY_VERSION = re.compile(r"^memory/v(\d+)\.json$")
_MEMORY_VARIANT = re.compile(r"^memory/v(\d+)([_-][^/]+)\.json$")
_LONG_HORIZON = re.compile(r"^memory/long_horizon_e(\d+)\.json$")
_SNAPSHOT = re.compile(r"^versions/kernel_v(\d+)\.py$")


@dataclass
class TraceMeta:
    label: str
    head: str
    operator_name: str
    operator_basis: str  # where the operator's name came from (never the trace label)
    operator_slug: str
    workload_family: str
    description: str
    constants: dict
    var_axes: list[str]
    n_shapes: int
    vendor: str
    arch: str
    product: str | None
    hardware_basis: str  # which token (or flag) decided
    harness: str


@dataclass
class Ingest:
    meta: TraceMeta
    rows: list[VersionRow]
    captures: list[Capture]
    variants: list[dict]
    non_version_files: list[dict]
    non_version_commits: list[str]
    refused: list[str]  # paths refused by the path-safety rules, with the reason
    scrubber: Scrubber  # the trace's scrubber, its user names learned from all its text
    snapshots: dict[int, str] = field(default_factory=dict)  # N -> versions/kernel_v<N>.py
    commits: frozenset[str] = frozenset()  # every commit reachable from the tip
    root: str = ""  # the oldest commit: stable while the trace grows
    kernel_sources: dict[int, str] = field(default_factory=dict)  # N -> kernel.py text
    kernel_texts: dict[str, str] = field(default_factory=dict)  # blob -> text, as read once
    _by_n: dict[int, VersionRow] = field(default_factory=dict, repr=False)

    def texts(self) -> Iterator[str]:
        """Every text a record or report may be built from, code included (rule 11)."""
        return _all_text(self.meta, self.rows, self.captures, self.kernel_sources.values())

    def row(self, n: int) -> VersionRow | None:
        if len(self._by_n) != len(self.rows):
            self._by_n = {r.n: r for r in self.rows}
        return self._by_n.get(n)


@dataclass
class _History:
    """What the walk over the commits found, oldest first."""

    commits: list  # CommitInfo, oldest first
    first_add: dict[int, str] = field(default_factory=dict)  # N -> first commit adding memory
    memory_blob: dict[int, tuple] = field(default_factory=dict)  # N -> newest (blob, mode)
    prefix_commits: dict[int, list] = field(default_factory=dict)  # N -> v<N>: commits
    kernel_changed: set[str] = field(default_factory=set)
    journals: dict[str, str] = field(default_factory=dict)  # commit -> long_horizon_e*.json
    variants: list[dict] = field(default_factory=list)
    non_version_files: list[dict] = field(default_factory=list)
    non_version_commits: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.order = {c.sha: i for i, c in enumerate(self.commits)}
        self.by_sha = {c.sha: c for c in self.commits}
        self.roots: dict[str, dict[str, tuple[int, str]]] = {}
        self.kernels: dict[str, tuple[str | None, str | None]] = {}  # blob -> (text, problem)
        self._dsls: dict[str, str] = {}

    def dsl_of(self, text: str) -> str:
        if text not in self._dsls:
            self._dsls[text] = sniff_dsl(text)
        return self._dsls[text]

    def root(self, repo: Repository, sha: str) -> dict[str, tuple[int, str]]:
        """The top-level entries of a commit, read once."""
        if sha not in self.roots:
            info = self.by_sha.get(sha) or repo.commit(sha)
            self.roots[sha] = repo.tree_entries(info.tree)
        return self.roots[sha]


def ingest(repo: Repository, tip: str, label: str, options: TraceOptions | None = None) -> Ingest:
    """Read the trace at ``tip`` into version rows. Raises TraceError only when nothing can
    be mined (no kernel.py at the tip, no hardware); everything else degrades per version."""
    options = options if options is not None else TraceOptions()
    files = TraceFiles(repo, tip)
    if repo.read(tip, "kernel.py") is None and not repo.is_symlink(tip, "kernel.py"):
        raise TraceError(f"{label}: the trace's HEAD has no kernel.py")
    history = _walk(repo, tip)
    hardware = resolve_hardware(files, options, _earlier_solutions(repo, files, history))
    rows, kernels = [], {}
    for n in sorted(set(history.first_add) | set(history.prefix_commits)):
        row, source = _row(repo, files, history, n)
        if source is not None:
            kernels[n] = source
        if options.dsl:
            row.dsl = options.dsl
        rows.append(row)
    non_target = tuple(options.non_target_kernels or DEFAULT_NON_TARGET_KERNELS)
    meta = _meta(files, label, tip, hardware, options)
    captures = read_captures(files, non_target, kernels)
    _read_journals(files, rows)
    scrubber = Scrubber(options.denylist)
    for text in _all_text(meta, rows, captures, kernels.values()):
        scrubber.learn(text)
    # Names are made from scrubbed text only (rule 11).
    meta.operator_slug = operator_slug(scrubber.name(meta.operator_name))
    meta.workload_family = workload_family(meta.operator_slug, scrubber.name(meta.description))
    meta.operator_name = scrubber.private(meta.operator_name)
    return Ingest(
        meta=meta,
        rows=rows,
        captures=captures,
        variants=history.variants,
        non_version_files=history.non_version_files,
        non_version_commits=history.non_version_commits,
        refused=files.refused,
        scrubber=scrubber,
        commits=frozenset(history.by_sha),
        root=history.commits[0].sha if history.commits else tip,
        kernel_sources=kernels,
        kernel_texts={blob: text for blob, (text, _) in history.kernels.items() if text},
        snapshots={
            int(m.group(1)): path
            for path, _ in repo.list_tree(tip, "versions")
            if (m := _SNAPSHOT.match(path))
        },
    )


def _earlier_solutions(
    repo: Repository, files: TraceFiles, history: _History
) -> Iterator[tuple[str, object]]:
    """(commit, solution.json) of each distinct earlier manifest, newest first."""
    seen: set[str] = set()
    for info in reversed(history.commits):
        entry = history.root(repo, info.sha).get("solution.json")
        if entry is None or entry[1] in seen or not stat.S_ISREG(entry[0]):
            continue
        seen.add(entry[1])
        yield info.sha, files.at(info.sha).json("solution.json")


def _read_journals(files: TraceFiles, rows: list[VersionRow]) -> None:
    """Promotions read their own journal; a committed supervisor folder fills in the rest."""
    for row in rows:
        if row.journal_path and row.event_sha and row.promotion:
            row.journal = promotion_journal(files.at(row.event_sha), row.journal_path, row.episode)
            if row.journal is not None and row.improvement_pct is None:
                row.improvement_pct = row.journal.improvement_pct
    attach(rows, supervisor_journals(files))


def _all_text(
    meta: TraceMeta, rows: list[VersionRow], captures: list[Capture], kernels: Iterable[str]
) -> Iterator[str]:
    """Every text a record or report may be built from (rule 11), for the scrubber to learn
    the user names in it before anything is scrubbed."""
    yield meta.description
    yield meta.operator_name
    for row in rows:
        yield row.text
        yield row.expected_impact
        for group in (row.pitfalls, row.open_directions, row.experiments):
            for entry in group:
                yield from (str(v) for v in (entry or {}).values())
        if row.journal is not None:
            yield str(row.journal.excerpt())
    for capture in captures:
        yield capture.conclusion
    yield from kernels


def _walk(repo: Repository, tip: str) -> _History:
    """One pass over the commits, oldest first. Each commit's top-level entries are compared
    with its first parent's, and memory/ is diffed entry by entry only where its tree
    changed, so the walk is linear in the commits and the memory files they touch."""
    history = _History(_commits(repo, tip))
    for info in history.commits:
        entries = history.root(repo, info.sha)
        parent = history.root(repo, info.parents[0]) if info.parents else {}
        kernel = entries.get("kernel.py")
        if kernel is not None and kernel != parent.get("kernel.py"):
            history.kernel_changed.add(info.sha)
        memory, before = _folder(entries.get("memory")), _folder(parent.get("memory"))
        if memory != before:
            for change in treediff.entry_changes(repo, before, memory, "memory"):
                for path, blob, mode in _memory_files(repo, change):
                    _memory_change(history, info.sha, path, blob, mode)
        prefix = VERSION_PREFIX.match(info.subject)
        if prefix:
            history.prefix_commits.setdefault(int(prefix.group(1)), []).append(info)
        elif not EPISODE.match(info.subject):
            history.non_version_commits.append(info.subject[:90])
    return history


def _commits(repo: Repository, tip: str) -> list:
    """The commits reachable from ``tip``, each read once, parents before children."""
    infos: dict[str, object] = {}
    order: list = []
    stack: list[tuple[str, bool]] = [(tip, False)]
    while stack:
        sha, expanded = stack.pop()
        if expanded:
            order.append(infos[sha])
            continue
        if sha in infos:
            continue
        infos[sha] = info = repo.commit(sha)
        stack.append((sha, True))
        # The first parent is pushed last, so its history comes first.
        stack.extend((p, False) for p in reversed(info.parents) if p not in infos)
    return order


def _folder(entry: tuple[int, str] | None) -> str | None:
    return entry[1] if entry is not None and stat.S_ISDIR(entry[0]) else None


def _memory_files(repo: Repository, change: treediff.PathChange) -> list[tuple[str, str, int]]:
    """(path, blob, mode) of what one changed memory/ entry added or modified; a changed
    subfolder (rare) is diffed in full."""
    if change.kind == "delete":
        return []
    if not stat.S_ISDIR(change.new_mode):
        return [(change.path, change.new_sha, change.new_mode)]
    old = change.old_sha if stat.S_ISDIR(change.old_mode) else None
    return [
        (c.path, c.new_sha, c.new_mode)
        for c in treediff.tree_changes(repo, old, change.new_sha, change.path)
        if c.kind != "delete"
    ]


def _memory_change(history: _History, sha: str, path: str, blob: str, mode: int) -> None:
    match = _MEMORY_VERSION.match(path)
    if match:
        n = int(match.group(1))
        history.first_add.setdefault(n, sha)
        history.memory_blob[n] = (blob, mode)
    elif variant := _MEMORY_VARIANT.match(path):
        history.variants.append(
            {"file": path, "base": f"v{variant.group(1)}", "suffix": variant.group(2)[1:]}
        )
    elif _LONG_HORIZON.match(path):
        history.journals[sha] = path
        history.non_version_files.append({"file": path, "reason": "long-horizon evidence"})
    else:
        history.non_version_files.append({"file": path, "reason": "not a version name"})


def _row(
    repo: Repository, files: TraceFiles, history: _History, n: int
) -> tuple[VersionRow, str | None]:
    """Version ``n``'s row and its kernel source (None when unreadable)."""
    row = VersionRow(version=f"v{n}", n=n)
    event = history.first_add.get(n)
    same_prefix = history.prefix_commits.get(n, [])
    row.event_sha = event
    if event is not None and event in history.kernel_changed:
        row.code_sha = event
    else:
        limit = history.order[event] if event is not None else len(history.commits)
        code = [
            c
            for c in same_prefix
            if c.sha in history.kernel_changed and history.order[c.sha] <= limit
        ]
        row.code_sha = code[-1].sha if code else None
    row.has_commit = bool(event or same_prefix)
    row.sha = row.code_sha or event or (same_prefix[-1].sha if same_prefix else None)
    if row.sha is not None:
        row.cited_commit_kind = long_horizon_commit(history.by_sha[row.sha].subject)
    text_commit = same_prefix[-1] if same_prefix else history.by_sha[event]
    row.subject = text_commit.subject
    row.body = body_of(text_commit.message)
    row.reverted = any(is_reverted(c.subject, "") for c in same_prefix[-1:]) or any(
        is_reverted("", body_of(c.message)) for c in same_prefix
    )
    message = f"{row.subject}\n{row.body}"
    row.deadend_items, row.deadend_blob, row.next_direction = parse_deadends(message)
    row.deadend_streak = deadend_streak(message)
    episode = episode_of(history.by_sha[event].subject) if event else None
    if episode is not None:
        row.episode, row.promotion = episode, True
        row.journal_path = history.journals.get(event)
    else:
        # A non-promotion names its episode in its subject (rule 14).
        row.episode = outcome_episode(row.subject)
    if row.code_sha:
        row.parent = (history.by_sha[row.code_sha].parents or (None,))[0]
    if n in history.memory_blob:
        row.has_memory = True
        row.memory_path = f"memory/v{n}.json"
        blob, mode = history.memory_blob[n]
        raw, refused = None, None
        if stat.S_ISLNK(mode):
            refused = "memory file is a symlink, refused; no numbers"
        else:
            raw = repo.blob(blob)
            if len(raw) > MAX_FILE_BYTES:
                raw, refused = None, "memory file over the 8 MiB limit, refused; no numbers"
        read_memory(row, raw, refused)
    return row, _kernel_source(repo, files, history, row)


def _kernel_source(
    repo: Repository, files: TraceFiles, history: _History, row: VersionRow
) -> str | None:
    commit = row.code_sha or row.sha
    if commit is None:
        return None
    entry = history.root(repo, commit).get("kernel.py")
    key = entry[1] if entry is not None and stat.S_ISREG(entry[0]) else None
    row.kernel_blob = key
    if row.parent is not None and row.code_sha is not None:
        before = history.root(repo, row.parent).get("kernel.py")
        row.parent_kernel_blob = before[1] if before and stat.S_ISREG(before[0]) else None
    if key is None or key not in history.kernels:
        # A regular file is read by its blob id; anything else under rule 6's checks.
        source = repo.blob(key) if key else files.at(commit).read("kernel.py")
        if source is not None and len(source) > MAX_FILE_BYTES:
            files.refused.append(f"kernel.py at {commit[:12]}: over the 8 MiB limit, refused")
            source = None
        found: tuple[str | None, str | None]
        try:
            found = (source.decode("utf-8"), None) if source is not None else (None, None)
        except UnicodeDecodeError as exc:
            found = (None, f"kernel.py is not UTF-8 (byte {exc.start}); no code")
        if key is None:
            text, problem = found
        else:
            history.kernels[key] = found
    if key is not None:
        text, problem = history.kernels[key]
    if problem:
        row.problems.append(problem)
    if text is not None:
        row.dsl = history.dsl_of(text)
    return text


def _operator(files: TraceFiles, definition: dict, options: TraceOptions) -> tuple[str, str]:
    """The operator's name and where it came from (rule 12): the flag, the definition, else
    the kernel's entry point; never the trace label."""
    if options.operator:
        return options.operator, "the --operator flag"
    if stripped_text(definition.get("name")):
        return stripped_text(definition.get("name")), "definition.json name"
    spec = mapping(mapping(files.json("solution.json")).get("spec"))
    source = (files.read("kernel.py") or b"").decode("utf-8", "replace")
    found = entry_point(source, stripped_text(spec.get("entry_point")) or None)
    if found:
        return found, "the kernel's entry point"
    return "unknown", "no --operator, no definition.json name, no kernel entry point"


def _meta(
    files: TraceFiles,
    label: str,
    tip: str,
    hardware: tuple[str, str, str | None, str],
    options: TraceOptions,
) -> TraceMeta:
    vendor, arch, product, hardware_basis = hardware
    definition = mapping(files.json("definition.json"))
    name, operator_basis = _operator(files, definition, options)
    description = stripped_text(definition.get("description"))
    axes = mapping(definition.get("axes"))
    constants = {
        k: v["value"]
        for k, v in axes.items()
        if isinstance(v, dict) and v.get("type") == "const" and v.get("value") is not None
    }
    var_axes = [k for k, v in axes.items() if isinstance(v, dict) and v.get("type") == "var"]
    workload = files.read("workload.jsonl")
    n_shapes = 0
    if workload is not None:
        lines = workload.decode("utf-8", "replace").splitlines()
        n_shapes = sum(1 for line in lines if line.strip())
    return TraceMeta(
        label=label,
        head=tip,
        operator_name=name,
        operator_basis=operator_basis,
        operator_slug="",  # set from the scrubbed name
        workload_family="",
        description=description,
        constants=constants,
        var_axes=var_axes,
        n_shapes=n_shapes,
        vendor=vendor,
        arch=arch,
        product=product,
        hardware_basis=hardware_basis,
        harness=options.harness or DEFAULT_HARNESS,
    )


def attach(rows: list[VersionRow], journals: dict[int, Journal]) -> None:
    """Give each long-horizon row its committed journal: experiments and the authoritative
    figure where its memory states none."""
    by_version = {j.version: j for j in journals.values() if j.version is not None}
    for row in rows:
        episode = row.episode
        journal = journals.get(episode) if episode is not None else by_version.get(row.n)
        if journal is None or (journal.version is not None and journal.version != row.n):
            continue
        row.journal = row.journal or journal
        if not row.experiments:
            row.experiments = [dict(e) for e in journal.experiments]
            row.experiments_from = journal.path
        if row.improvement_pct is None and row.promotion:
            row.improvement_pct = journal.improvement_pct
