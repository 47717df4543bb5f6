"""The server hook's check of one push: incremental, so its cost follows the push.

For ``refs/heads/main`` every pushed commit is checked against its first parent,
as the admission it is: the record-level gates run on the records it adds or
changes, against the store as it stood before it (the server's index cache,
moved by tree diffs and rolled back afterwards); an added record must not take
an id another file holds; ledgers and feedback logs only grow; and an ordinary
commit's trailers must name what it changed. A merge (a ``git pull`` in a clone)
answers for its net change against its first parent: the same record gates and
id check on every record it brings in, ledger and feedback lines only appended,
no trailers needed.
``records/index.json`` is derived data: a push may delete it (``kb upgrade``) or
keep a format-1 store's copy, never add it. At the new tip, the links of the
records the push changed must resolve.

``refs/kb/traces/*`` may be created or fast-forwarded; deleting or rewriting one
is refused while a record on main cites that trace. Other refs pass.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gitkb import layout
from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.gates import Finding, GateContext, run_gates
from gitkb.record.index import INDEX_PATH
from gitkb.store.cache import IndexCache
from gitkb.store.view import StoreView
from gitkb.store.writer import message_problems
from gitkb.vcs.repository import ZERO_SHA, CommitInfo, PathChange, Repository

# Admissions that change many records at once and name a source, not a record.
BULK_ACTIONS = ("import", "reindex", "init", "upgrade")
# Append-only folders and the finding name their checks report under.
_APPEND_ONLY = ((layout.LEDGER_DIR, "ledger"), (layout.FEEDBACK_DIR, "feedback"))


def _append_only_gate(path: str) -> str | None:
    """The gate that guards an append-only log at ``path`` (ledger, feedback), or None."""
    return next((gate for folder, gate in _APPEND_ONLY if path.startswith(folder + "/")), None)


_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class RefUpdate:
    old: str | None  # None: the ref is created
    new: str | None  # None: the ref is deleted
    ref: str


def parse_updates(lines: Iterable[str]) -> list[RefUpdate]:
    """The ``old new ref`` lines git feeds a pre-receive hook."""
    updates = []
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3:
            raise GitkbError(f"pre-receive: expected 'old new ref', got {line.strip()!r}")
        old, new, ref = parts
        if not (_SHA.fullmatch(old) and _SHA.fullmatch(new)):
            raise GitkbError(f"pre-receive: expected two 40-hex commit ids, got {line.strip()!r}")
        updates.append(
            RefUpdate(None if old == ZERO_SHA else old, None if new == ZERO_SHA else new, ref)
        )
    return updates


def check_push(updates: list[RefUpdate], repo: Repository) -> list[str]:
    """Problem lines ``<ref> <commit>: <record-id>: <gate>: <what>``; empty accepts the push."""
    for update in updates:
        for sha in (update.old, update.new):
            if sha is not None and not repo.has_object(sha):
                raise GitkbError(
                    f"pre-receive: {update.ref}: commit {sha} is not in the repository"
                )
    pushed = repo.with_refs({u.ref: u.new for u in updates})
    cache = IndexCache.of(repo)
    held = tuple(repo.refs("refs").values())  # what the repository holds before the push
    problems: list[str] = []
    for update in updates:
        if update.ref == layout.BRANCH:
            findings = _check_main(pushed, cache, update, held)
        elif update.ref.startswith(layout.TRACE_REFS):
            findings = _check_trace_ref(pushed, cache, update)
        else:
            continue
        problems += [f"{update.ref} {sha}: {finding.line()}" for sha, finding in findings]
    return problems


# --------------------------------------------------------------------------- main


def _check_main(
    repo: Repository, cache: IndexCache, update: RefUpdate, held: tuple
) -> list[tuple[str, Finding]]:
    if update.new is None:
        return [(ZERO_SHA, Finding("-", "history", "the records branch cannot be deleted"))]
    # A new main is checked from where it leaves what the repository already holds.
    exclude = (update.old,) if update.old else held
    commits = _oldest_first(list(repo.walk(update.new, exclude=exclude)))
    if update.old and update.new != update.old and not _descends(commits, update.old):
        what = f"not a fast-forward of {update.old}: the admission history is append-only"
        return [(update.new, Finding("-", "history", what))]
    if not commits:
        return []
    if update.old:
        # Bring the server's cache up to main as it stands (what the last push changed),
        # so the push's own checks cost the push.
        with cache.snapshot(update.old):
            pass
    out: list[tuple[str, Finding]] = []
    changed: dict[str, rec.RecordFile | None] = {}  # record path -> its state at the new tip
    base = commits[0].parents[0] if commits[0].parents else None
    with cache.snapshot(base, keep=False):
        for commit in commits:
            out += [(commit.sha, f) for f in _check_commit(repo, cache, commit, changed)]
        tip = StoreView(repo, cache, update.new)
        for record_file in changed.values():
            if record_file is not None and record_file.data is not None:
                out += [(update.new, f) for f in _dangling_links(record_file, tip)]
    return out


def _check_commit(
    repo: Repository, cache: IndexCache, commit: CommitInfo, changed: dict
) -> list[Finding]:
    parent = commit.parents[0] if commit.parents else None
    merge = len(commit.parents) > 1
    changes = [
        c for prefix in layout.ADMITTED_DIRS for c in repo.changes(parent, commit.sha, prefix)
    ]
    findings = [Finding(rid, "commit-msg", what) for rid, what in message_problems(commit.message)]
    if not merge:
        findings += _trailer_findings(commit, changes)
    findings += _index_file_findings(repo, parent, commit)
    logs = {c.path: c for c in changes if _append_only_gate(c.path)}
    for other in commit.parents[1:]:
        # What a merge leaves out of another parent: its records, conflicts and logs may
        # not be dropped (a `-s ours` merge would quietly undo a clone's admissions).
        for change in (c for d in layout.ADMITTED_DIRS for c in repo.changes(other, commit.sha, d)):
            if _append_only_gate(change.path):
                logs.setdefault(change.path, change)
            elif change.kind == "delete" and change.path != INDEX_PATH:
                what = f"the merge drops {change.path}, which {other[:12]} holds"
                findings.append(Finding(layout.id_of(change.path), "history", what))
    for change in logs.values():
        findings += _append_only_findings(repo, commit, change, _append_only_gate(change.path))
    before = StoreView(
        repo,
        cache,
        parent,
        hidden=frozenset(c.path for c in changes if c.kind != "add"),
        files_at=commit.sha,
    )
    checked = []
    for change in changes:
        if not rec.is_record_path(change.path):
            continue
        if change.kind == "delete":
            changed[change.path] = None
            continue
        if not change.regular[1]:
            what = f"{change.path} is not a regular file (a link or a submodule is no record)"
            findings.append(Finding(layout.id_of(change.path), "ids", what))
            continue
        record_file = rec.load(change.path, repo.blob(change.new_sha))
        changed[change.path] = record_file
        checked.append(record_file)
    findings += _id_findings(repo, before, commit, checked)
    if checked:
        from gitkb.gates.registry import record_level

        # Ids were checked above, against the store before the commit, naming both commits;
        # "push" tells the store-overlap gate so.
        ctx = GateContext(records=checked, store=before, extra={"admission": "push"})
        findings += [f for result in run_gates(ctx, record_level()) for f in result.findings]
    return findings


def _id_findings(
    repo: Repository, before: StoreView, commit: CommitInfo, checked: list[rec.RecordFile]
) -> list[Finding]:
    """An added record may not take an id another file holds, in the store before the
    commit or twice within it; the finding names both commits and the way out."""
    findings = []
    counts = Counter(r.id for r in checked)
    for record_file in checked:
        record_id = record_file.id
        if counts[record_id] > 1:
            what = f"{counts[record_id]} files of this commit hold this id"
            findings.append(Finding(record_id, "ids", what, "id"))
            continue
        others = [r for r in before.rows_of(record_id) if r.path != record_file.path]
        if not others:
            continue
        first = _admitting_commit(repo, before.tip, others[0].path)
        what = (
            f"already in the store at {others[0].path} (admitted by {first[:12]}); "
            f"{commit.sha[:12]} admits it again at {record_file.path}. "
            f"In the clone that made {commit.sha[:12]}: git kb renumber {record_id}, "
            "then push again"
        )
        findings.append(Finding(record_id, "ids", what, "id"))
    return findings


def _admitting_commit(repo: Repository, tip: str, path: str) -> str:
    """The newest commit on ``tip``'s first-parent line that added ``path`` (runs only for
    a refusal)."""
    current = tip
    while True:
        info = repo.commit(current)
        parent = info.parents[0] if info.parents else None
        if parent is None or repo.blob_sha(parent, path) is None:
            return current
        current = parent


def _trailer_findings(commit: CommitInfo, changes: list[PathChange]) -> list[Finding]:
    """A commit that changes records, conflicts or ledgers says so in its trailers."""
    touched = {c.path for c in changes if c.path != INDEX_PATH}
    if not touched:
        return []
    ids = sorted({layout.id_of(path) for path in touched})
    trailers: dict[str, list[str]] = {}
    for key, value in commit.trailers:
        trailers.setdefault(key, []).append(value)
    actions = trailers.get("KB-Action")
    if not actions:
        first = sorted(touched)[0]
        more = f" and {len(touched) - 1} more files" if len(touched) > 1 else ""
        what = f"changes {first}{more} but carries no KB-Action trailer"
        return [Finding(ids[0], "trailers", what)]
    if actions[0] in BULK_ACTIONS:
        return []
    named = set(trailers.get("KB-Record", []))
    return [
        Finding(rid, "trailers", f"changed by a commit whose KB-Record names {_list(named)}")
        for rid in ids
        if rid not in named
    ]


def _index_file_findings(repo: Repository, parent: str | None, commit: CommitInfo) -> list[Finding]:
    """records/index.json may leave history (store format 2) or stay in a format-1 store;
    it never comes back."""
    had = parent is not None and repo.blob_sha(parent, INDEX_PATH) is not None
    has = repo.blob_sha(commit.sha, INDEX_PATH) is not None
    if has and not had and len(commit.parents) < 2:
        what = (
            "records/index.json is derived data and stays out of history (store format 2); "
            "git kb export gpu-wiki writes one"
        )
        return [Finding(INDEX_PATH, "index", what)]
    return []


def _append_only_findings(
    repo: Repository, commit: CommitInfo, change: PathChange, gate: str
) -> list[Finding]:
    """Ledgers and feedback logs only grow: an ordinary commit appends lines; a merge keeps
    every line of every parent and adds none of its own (git's union merge)."""
    record_id = layout.id_of(change.path)
    new = repo.read(commit.sha, change.path)
    if new is None:
        return [Finding(record_id, gate, f"{change.path} is deleted; {gate} logs only grow")]
    if len(commit.parents) < 2:
        old = repo.blob(change.old_sha) if change.old_sha else b""
        if not new.startswith(old):
            return [Finding(record_id, gate, f"{change.path}: lines were changed or removed")]
        return []
    merged = Counter(new.splitlines())
    sides = [repo.read(p, change.path) or b"" for p in commit.parents]
    for side in sides:
        if Counter(side.splitlines()) - merged:
            what = f"{change.path}: the merge dropped lines a parent holds"
            return [Finding(record_id, gate, what)]
    if merged - sum((Counter(s.splitlines()) for s in sides), Counter()):
        return [Finding(record_id, gate, f"{change.path}: the merge added lines of its own")]
    return []


def _dangling_links(record_file: rec.RecordFile, tip: StoreView) -> Iterator[Finding]:
    """The relations gate for a record the push changed: its links resolve at the new tip."""
    from gitkb.gates.relations import dangling_links

    class _Ids:
        def __contains__(self, record_id: object) -> bool:
            return isinstance(record_id, str) and record_id in tip

    yield from dangling_links(record_file.id, record_file.data, _Ids())


# --------------------------------------------------------------------------- trace refs


def _check_trace_ref(
    repo: Repository, cache: IndexCache, update: RefUpdate
) -> list[tuple[str, Finding]]:
    if update.old is None:
        return []
    if update.new is not None:
        if update.new == update.old:
            return []
        if _descends(list(repo.walk(update.new, exclude=(update.old,))), update.old):
            return []
    label = update.ref[len(layout.TRACE_REFS) :]
    what = "deleted" if update.new is None else "rewritten (only fast-forwards are allowed)"
    sha = update.new or ZERO_SHA
    main_tip = repo.resolve(layout.BRANCH)
    citing = []
    if main_tip is not None:
        with cache.snapshot(main_tip, keep=False):
            citing = sorted({r.id or layout.id_of(r.path) for r in cache.rows_citing(label)})
    return [
        (sha, Finding(rid, "trace-refs", f"cites trace {label}, so {update.ref} cannot be {what}"))
        for rid in citing
    ]


# --------------------------------------------------------------------------- helpers


def _list(values: Iterable[str]) -> str:
    values = sorted(set(values))
    return ", ".join(values) if values else "nothing"


def _descends(commits: list[CommitInfo], old: str) -> bool:
    """Whether the commits walked from a new tip, excluding ``old``, reach ``old``: then
    one of them has it as a parent (cost: the pushed commits, not the history)."""
    return any(old in c.parents for c in commits)


def _oldest_first(commits: list[CommitInfo]) -> list[CommitInfo]:
    """The pushed commits, parents before children, whatever their dates say."""
    pushed = {c.sha: c for c in commits}
    children: dict[str, list[str]] = {}
    waiting: dict[str, int] = {}
    for c in commits:
        inside = [p for p in c.parents if p in pushed]
        waiting[c.sha] = len(inside)
        for p in inside:
            children.setdefault(p, []).append(c.sha)
    ready = [c.sha for c in reversed(commits) if waiting[c.sha] == 0]
    out = []
    while ready:
        sha = ready.pop()
        out.append(pushed[sha])
        for child in children.get(sha, ()):
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return out
