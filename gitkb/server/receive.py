"""A push, judged: which refs it may move, and every commit it brings through the
store's history rules (``gitkb.server.history``) and the record gates. Incremental, so
the cost follows the push: each commit is read as its tree diff against its first
parent; the record gates run on the records it adds or changes, against the store as
it stood before it (the server's index cache, moved by tree diffs and rolled back).

Refs: ``main`` only moves forward; ``refs/kb/traces/*`` may be created or
fast-forwarded, never deleted or rewritten by a push, and where access is on only with
the commits that name them (``_check_trace_ref``); any other ref is refused
unless ``gitkb.toml`` (``[refs] allow``) names its pattern, and then it is held to
main's rules. ``transaction_problems`` is the ``reference-transaction`` side: with
the ref locks held, main may not land citing a trace commit no trace ref reaches.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field

from gitkb import layout
from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.gates import Finding, GateContext
from gitkb.gates.registry import record_level
from gitkb.gates.relations import dangling_links
from gitkb.server import access, control, history, merges
from gitkb.server.bounds import Budget, OverBound
from gitkb.server.ids import IdLookup
from gitkb.store import config as store_config
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.config import StoreConfig
from gitkb.store.view import StoreView
from gitkb.vcs import receiving
from gitkb.vcs.repository import ZERO_SHA, CommitInfo, Repository


@dataclass(frozen=True)
class RefUpdate:
    old: str | None  # None: the ref is created
    new: str | None  # None: the ref is deleted
    ref: str


@dataclass
class PushCheck:
    """What a push check found: problem lines ``<ref> <commit>: <record-id>: <rule>:
    <what>`` (none: the push may land), the (label, trace commit) pairs the records it
    brings onto main cite, and those the commits it brings onto any branch name (their
    ``KB-Trace``/``KB-Trace-Commit`` trailers, their records' evidence)."""

    problems: list[str] = field(default_factory=list)
    cited: set[tuple[str, str]] = field(default_factory=set)
    claimed: set[tuple[str, str]] = field(default_factory=set)


def check_push(
    updates: list[RefUpdate],
    repo: Repository,
    *,
    anchor: bytes | None,
    pushed_bytes: int = 0,
) -> PushCheck:
    """The server's whole verdict on a push: every ref update, and every commit it brings
    through the history rules, the access rules (``gitkb.server.access``; ``anchor``: who
    may turn access on, ``access.anchor``) and the record gates, within the server's
    bounds (``pushed_bytes``: the size of the objects it brought): past one, the check
    stops at a line saying which."""
    pushed = repo.with_refs({u.ref: u.new for u in updates})
    cache = IndexCache.of(repo)
    held = tuple(repo.refs("refs").values())  # what the repository holds before the push
    held_main = repo.resolve(layout.BRANCH)
    config = _config(repo, held_main)
    guarded = access.rules_at(repo, held_main) is not None  # access is on: trace refs claimed
    ids = IdLookup(repo)
    check = PushCheck()
    budget = Budget(config.bounds)
    at = updates[0] if updates else None  # the update being checked, for a bound's line
    try:
        budget.brings_bytes(pushed_bytes)
        # Branches first: a trace ref is judged by what the push brings onto them.
        for at in sorted(updates, key=lambda u: u.ref.startswith(layout.TRACE_REFS)):
            budget.tick()
            if at.ref.startswith(layout.TRACE_REFS):
                findings = _check_trace_ref(pushed, at, check.claimed if guarded else None)
            else:
                findings = _check_update(
                    pushed, cache, ids, at, held, config, budget, anchor, check
                )
            check.problems += [f"{at.ref} {sha}: {f.line()}" for sha, f in findings]
    except OverBound as over:
        where = f"{at.ref} {at.new or ZERO_SHA}" if at else "-"
        check.problems.append(f"{where}: {Finding('-', 'bounds', str(over)).line()}")
    return check


def _check_update(
    pushed: Repository,
    cache: IndexCache,
    ids: IdLookup,
    update: RefUpdate,
    held: tuple,
    config: StoreConfig,
    budget: Budget,
    anchor: bytes | None,
    check: PushCheck,
) -> list[tuple[str, Finding]]:
    """The findings of one update of a ref other than a trace ref; the trace commits a
    move of main cites go to ``check.cited``, those any branch's commits name to
    ``check.claimed``."""
    if update.ref == layout.BRANCH or control.allowed_ref(config, update.ref):
        changed: dict[str, rec.RecordFile] = {}
        findings = _check_branch(
            pushed, cache, ids, update, held, config, changed, budget, anchor, check.claimed
        )
        pairs = {pair for r in changed.values() for pair in cites(r.data)}
        check.claimed |= pairs
        if update.ref == layout.BRANCH:
            check.cited |= pairs
        return findings
    what = (
        f"{update.ref} is no ref this store takes (main and refs/kb/traces/*; "
        "gitkb.toml [refs] allow names others)"
    )
    return [(update.new or ZERO_SHA, Finding("-", "refs", what))]


def _config(repo: Repository, tip: str | None) -> StoreConfig:
    """``gitkb.toml`` at ``tip`` through the store's one reader; where there is none, or it
    cannot be read (a store pushed before its hooks were installed), no other refs and
    the default bounds."""
    raw = repo.read(tip, layout.CONFIG_PATH) if tip else None
    try:
        return store_config.parse(tomllib.loads((raw or b"").decode()), str(repo.git_dir))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, GitkbError):
        return store_config.UNREADABLE


# --------------------------------------------------------------------------- branches


def _check_branch(
    repo: Repository,
    cache: IndexCache,
    ids: IdLookup,
    update: RefUpdate,
    held: tuple,
    config: StoreConfig,
    changed: dict,
    budget: Budget,
    anchor: bytes | None,
    claimed: set[tuple[str, str]],
) -> list[tuple[str, Finding]]:
    """Findings of a move of main (or an allowed branch); ``changed`` gets each record
    path the move adds or changes, as read at the new tip, and ``claimed`` each (trace
    label, trace commit) its commits' trailers name. Each commit walked, record file
    written and step taken is counted against ``budget``."""
    if update.new is None:
        what = (
            "the records branch cannot be deleted"
            if update.ref == layout.BRANCH
            else (f"{update.ref} cannot be deleted")
        )
        return [(ZERO_SHA, Finding("-", "history", what))]
    # A new branch is checked from where it leaves what the repository already holds.
    exclude = (update.old,) if update.old else held
    walked = []
    for commit in repo.walk(update.new, exclude=exclude):
        budget.brings_commit()
        walked.append(commit)
        claimed |= _named_traces(commit)
    commits = _oldest_first(walked)
    if update.old and update.new != update.old and not _descends(commits, update.old):
        what = f"not a fast-forward of {update.old}: the admission history is append-only"
        return [(update.new, Finding("-", "history", what))]
    if not commits:
        return []
    if update.old:
        # Bring the server's cache up to the branch as it stands, so the push's own
        # checks cost the push.
        with cache.snapshot(update.old):
            pass
    before = history.Before(repo, ids, config.max_record_bytes)
    # The signatures are checked by ssh-keygen meanwhile, while the history rules and the
    # gates run here.
    judging = access.begin(repo, commits, anchor, budget)
    out: list[tuple[str, Finding]] = []
    base = commits[0].parents[0] if commits[0].parents else None
    with cache.snapshot(base, keep=False):
        for commit in commits:
            budget.tick()
            findings = history.check_commit(before, commit)
            findings += _gate_findings(before, cache, commit, changed, budget)
            out += [(commit.sha, f) for f in findings]
        out += access.findings(before, commits, anchor, budget=budget, begun=judging)
        budget.tick()
        tip = StoreView(repo, cache, update.new)
        for record_file in changed.values():
            if record_file.data is not None:
                out += [(update.new, f) for f in _dangling_links(record_file, tip)]
    return out


def _gate_findings(
    before_commit: history.Before,
    cache: IndexCache,
    commit: CommitInfo,
    changed: dict,
    budget: Budget,
) -> list[Finding]:
    """The record gates on the records ``commit`` adds or changes, against the store
    before it. Ids are the history rules' (checked against the tree, naming both
    commits); "push" tells the store-overlap gate so."""
    repo = before_commit.repo
    parent = commit.parents[0] if commit.parents else None
    changes = [
        c
        for c in before_commit.changes(commit)
        if not c.problem and rec.is_record_path(c.path) and not c.is_dir(c.new or c.old)
    ]
    budget.writes_records(sum(1 for c in changes if c.new is not None))
    checked = []
    for change in changes:
        if change.new is None or change.new[0] != 0o100644 or history.bad_name(change.path):
            continue  # a deletion, or an entry the entry rules refuse
        sha = change.new[1]
        record_file = rec.load(change.path, before_commit.documents.pop(sha, b"") or repo.blob(sha))
        if record_file.data is None:
            continue  # the strict-document rule refuses it
        changed[change.path] = record_file
        checked.append(record_file)
    if not checked:
        return []

    before = StoreView(
        repo,
        cache,
        parent,
        hidden=frozenset(c.path for c in changes if c.kind != "add"),
        files_at=commit.sha,
    )
    ctx = GateContext(records=checked, store=before, admission="push")
    found = []
    for gate in record_level():
        budget.tick()  # between gates too: one commit may bring many records
        found += gate.run(ctx).findings
    return found


def _dangling_links(record_file: rec.RecordFile, tip: StoreView) -> Iterator[Finding]:
    """The relations gate for a record the push changed: its links resolve at the new tip."""

    class _Ids:
        def __contains__(self, record_id: object) -> bool:
            return isinstance(record_id, str) and record_id in tip

    if record_file.data is not None:  # the strict-document rule refuses one that is not
        yield from dangling_links(record_file.id, record_file.data, _Ids())


# --------------------------------------------------------------------------- trace refs


def _check_trace_ref(
    repo: Repository, update: RefUpdate, claimed: set[tuple[str, str]] | None
) -> list[tuple[str, Finding]]:
    """A trace ref may be created or fast-forwarded. Where access is on (``claimed``: the
    (label, trace commit) pairs the push's branch commits name), only by a push whose
    commits on a branch name the label at a commit its new tip reaches: git signs no ref
    update, so the signed commits that cite a trace are what claim its label."""
    label = update.ref[len(layout.TRACE_REFS) :]
    if not history.PATH_CLASSES["trace-options"].fullmatch(f"traces/{label}.json"):
        return [(update.new or ZERO_SHA, Finding(label, "refs", f"{label!r} is no trace label"))]
    if update.new == update.old:
        return []
    unclaimed = claimed is not None and not any(
        name == label and _reaches(repo, update.new, c) for name, c in claimed
    )
    if update.new is not None and unclaimed:
        what = (
            f"{update.ref} moves only with the commits that cite it, signed (access is on): "
            f"this push brings no commit onto main naming trace {label} (KB-Trace, "
            f"KB-Trace-Commit, or a record's evidence) at a commit {update.new[:12]} reaches"
        )
        return [(update.new, Finding(label, "access", what))]
    if update.old is None:
        return []
    if update.new is not None:
        if _descends(list(repo.walk(update.new, exclude=(update.old,))), update.old):
            return []
        what = f"{update.ref} cannot be rewritten (only fast-forwards are allowed)"
        return [(update.new, Finding(label, "trace-refs", what))]
    what = (
        f"{update.ref} cannot be deleted by a push: records may cite it (removing an unused "
        "trace is the server administrator's act)"
    )
    return [(ZERO_SHA, Finding(label, "trace-refs", what))]


# --------------------------------------------------------------------------- the transaction


def announce(updates: list[RefUpdate], repo: Repository, cited: set[tuple[str, str]]) -> None:
    """After an accepted pre-receive check: leave this push's plan (``gitkb.vcs.receiving``):
    the trace refs it moves, and the trace commits its records on main cite that no trace
    ref reaches yet (``cited``: what the check read), so the transaction hooks can hold
    both ends together. Every other cited commit is reached already, and a push never
    deletes or rewrites a trace ref."""
    receiving.clear_plan(repo)
    traces = {u.ref: (u.old, u.new) for u in updates if u.ref.startswith(layout.TRACE_REFS)}
    needs = tuple(
        sorted(
            (label, commit)
            for label, commit in cited
            if not _reaches(repo, repo.resolve(layout.trace_ref(label)), commit)
        )
    )
    if needs or traces:
        receiving.write_plan(repo, receiving.Plan(receiving.this_push(), traces, needs))


def transaction_problems(updates: list[RefUpdate], repo: Repository) -> list[str]:
    """In git's ``reference-transaction`` hook, ``prepared`` state (this transaction's ref
    locks held): no move of main may leave it citing a trace commit that no trace ref
    reaches, and no trace ref may move where a push in progress needs it not to.

    The trace commits a move of main needs are those its push's plan names (the others
    were reached when the push was checked). Each passes where the trace ref as it
    stands, with this transaction applied, reaches it (``git push --atomic``: both in
    one transaction), or where this same push's plan moves that ref from where it stands
    now to a commit that reaches it and no other transaction holds the ref's lock (a
    plain push: git moves main first, the trace refs next). A trace ref passes unless a
    push in progress needs it to reach a commit its new tip does not."""
    after = repo.with_refs({u.ref: u.new for u in updates})
    plans = receiving.live_plans(repo)
    own = next((p for p in plans if p.push == receiving.this_push()), None)
    problems = []
    for update in updates:
        if update.ref == layout.BRANCH and update.new is not None and own is not None:
            for label, cited in own.needs:
                ref = layout.trace_ref(label)
                if _reaches(repo, after.resolve(ref), cited):
                    continue
                planned = own.updates.get(ref)
                if (
                    planned is not None
                    and planned[0] == repo.resolve(ref)
                    and _reaches(repo, planned[1], cited)
                    and not receiving.ref_locked(repo, ref)
                ):
                    continue
                what = (
                    f"cites trace commit {cited}, which {ref} does not reach (nor will this "
                    "push's own update of it: another push holds or moved it); push again"
                )
                problems.append(f"{update.ref} {update.new}: {label}: trace-refs: {what}")
        elif update.ref.startswith(layout.TRACE_REFS) and update.new is not None:
            label = update.ref[len(layout.TRACE_REFS) :]
            for plan in plans:
                if plan is own:
                    continue
                for needed_label, cited in plan.needs:
                    if needed_label == label and not _reaches(repo, update.new, cited):
                        what = (
                            f"a push in progress moves main citing trace commit {cited}, "
                            f"which {update.new[:12]} does not reach: push again"
                        )
                        problems.append(f"{update.ref} {update.new}: {label}: trace-refs: {what}")
    return problems


def _named_traces(commit: CommitInfo) -> set[tuple[str, str]]:
    """The (trace label, trace commit) pairs a commit's trailers name: each ``KB-Trace``
    with each ``KB-Trace-Commit``."""
    labels = [v for k, v in commit.trailers if k == "KB-Trace"]
    shas = [v for k, v in commit.trailers if k == "KB-Trace-Commit" and len(v) == 40]
    return {(label, sha) for label in labels for sha in shas}


def _reaches(repo: Repository, tip: str | None, commit: str) -> bool:
    return tip is not None and repo.has_object(commit) and repo.is_ancestor(commit, tip)


def cites(record: dict | None) -> set[tuple[str, str]]:
    """The (trace label, trace commit) a record's evidence cites, if any."""
    raw = rec.dig(record, "evidence", "raw")
    if isinstance(raw, dict):
        label, commit = raw.get("source_repo"), raw.get("git_commit")
        if isinstance(label, str) and isinstance(commit, str) and len(commit) == 40:
            return {(label, commit)}
    return set()


# --------------------------------------------------------------------------- history


def history_findings(repo: Repository, tip: str) -> list[tuple[str, Finding]]:
    """``git kb validate --history``: the history and access rules replayed over every
    commit that ``tip`` reaches, oldest first, as (commit, finding), as the pushes
    along main's first-parent line that made it (``merges.pushes_along``). The commit turning
    access on answers to the repository's anchor where it has one, else to itself."""
    ids = IdLookup(repo)
    before = history.Before(repo, ids, _config(repo, tip).max_record_bytes)
    out = []
    commits = _oldest_first(list(repo.walk(tip)))
    for commit in commits:
        out += [(commit.sha, f) for f in history.check_commit(before, commit)]
    landed = merges.pushes_along(commits, tip)
    out += access.findings(before, commits, access.anchor(repo, server=False), landed)
    return out


# --------------------------------------------------------------------------- helpers


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
