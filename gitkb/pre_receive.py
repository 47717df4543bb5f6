"""The server hook's check of one push: incremental, so its cost follows the push.

For ``refs/heads/main`` every pushed commit is checked against its parent: the
record-level gates run on exactly the record files it changed, its trailers must
match the change, and an added record must not take an id another file holds.
Then the index at the new tip must agree with every record the push changed and
every index entry the push changed. Only changed blobs and the two index
versions (before and after the push) are read, never the whole store.

``refs/kb/traces/*`` may be created or fast-forwarded; deleting or rewriting one
is refused while a record on main cites that trace. Other refs pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gitkb import record as rec
from gitkb.errors import GitkbError, RecordError
from gitkb.gates import Finding, GateContext, run_gates
from gitkb.record import INDEX_PATH, Index
from gitkb.store import ACTIONS, BRANCH, CONFLICTS_DIR, TRACE_REFS, Store
from gitkb.vcs.repository import ZERO_SHA, CommitInfo, Repository

LEDGER_DIR = "ledger"
# Admissions that change many records at once and name a source, not a record.
BULK_ACTIONS = ("import", "reindex", "init")
_SHA = re.compile(r"[0-9a-f]{40}")
_LINE_HEAD = b'{"id": "'


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
    pushed = _PushedRefs(repo, {u.ref: u.new for u in updates})
    main_after = pushed.resolve(BRANCH)
    problems: list[str] = []
    for update in updates:
        if update.ref == BRANCH:
            findings = _check_main(pushed, update)
        elif update.ref.startswith(TRACE_REFS):
            findings = _check_trace_ref(pushed, update, main_after)
        else:
            continue
        problems += [f"{update.ref} {sha}: {finding.line()}" for sha, finding in findings]
    return problems


# --------------------------------------------------------------------------- views


class _PushedRefs:
    """The repository as it will be once the push lands: refs read through the pushed
    updates, so a trace ref pushed together with the records citing it resolves."""

    def __init__(self, repo: Repository, pending: dict[str, str | None]) -> None:
        self.before = repo  # the refs as they were before the push
        self._pending = pending

    def __getattr__(self, name: str):
        return getattr(self.before, name)

    def resolve(self, ref: str) -> str | None:
        if ref in self._pending:
            return self._pending[ref]
        return self.before.resolve(ref)

    def refs(self, prefix: str) -> dict[str, str]:
        found = self.before.refs(prefix)
        for ref, sha in self._pending.items():
            if ref.startswith(prefix.rstrip("/") + "/"):
                if sha is None:
                    found.pop(ref, None)
                else:
                    found[ref] = sha
        return found


class _StoreBeforeCommit(Store):
    """The store as gates see it while one pushed commit is checked, as at admission:
    main at the commit's parent, its index without the records under check (kept up
    to date commit by commit instead of re-read)."""

    def __init__(self, repo: _PushedRefs, index: Index) -> None:
        super().__init__(repo, repo.git_dir)
        self._running = index
        self.at: str | None = None

    @property
    def tip(self) -> str:
        if self.at is None:
            raise GitkbError("the push starts a new main: there is no store before it yet")
        return self.at

    def index(self, commit: str | None = None) -> Index:
        if commit is None or commit == self.at:
            return self._running
        return super().index(commit)


# --------------------------------------------------------------------------- main


def _check_main(repo: _PushedRefs, update: RefUpdate) -> list[tuple[str, Finding]]:
    if update.new is None:
        return [(ZERO_SHA, Finding("-", "history", "the records branch cannot be deleted"))]
    # A new main is checked from where it leaves what the repository already holds.
    exclude = (update.old,) if update.old else tuple(repo.before.refs("refs").values())
    commits = _oldest_first(list(repo.walk(update.new, exclude=exclude)))
    if update.old and update.new != update.old and not _descends(commits, update.old):
        what = f"not a fast-forward of {update.old}: the admission history is append-only"
        return [(update.new, Finding("-", "history", what))]
    if not commits:
        return []
    base = commits[0].parents[0] if commits[0].parents else None

    out: list[tuple[str, Finding]] = []
    before, problem = _load_index(repo, base)
    if problem:
        before = Index()
    after, problem = _load_index(repo, update.new)
    if problem:
        out.append((update.new, problem))
    # Entries the push changed, found before `before` turns into the running index.
    entry_changes = {
        i
        for i in before.lines.keys() | after.lines.keys()
        if before.lines.get(i) != after.lines.get(i)
    }

    store = _StoreBeforeCommit(repo, before)
    final: dict[str, rec.RecordFile | None] = {}  # record path -> its state at the new tip
    for commit in commits:
        out += [(commit.sha, f) for f in _check_commit(repo, store, commit, final)]
    if not problem:
        out += [
            (update.new, f) for f in _index_agreement(repo, update.new, after, final, entry_changes)
        ]
    return out


def _check_commit(
    repo: _PushedRefs, store: _StoreBeforeCommit, commit: CommitInfo, final: dict
) -> list[Finding]:
    parent = commit.parents[0] if commit.parents else None
    changes = [
        change
        for prefix in (rec.RECORDS_DIR, CONFLICTS_DIR, LEDGER_DIR)
        for change in repo.changes(parent, commit.sha, prefix)
    ]
    findings = [
        Finding(rid, "commit-msg", what) for rid, what in admission_problems(commit.message)
    ]
    findings += _trailer_findings(repo, commit, changes)

    running = store.index()
    checked = []
    for change in changes:
        if not rec.is_record_path(change.path):
            continue
        if change.kind != "add":
            # The record's old self leaves the store the gates see (as at admission).
            old_id = _id_of(change.path)
            entry = running.entry(old_id)
            if entry is not None and entry.get("path") == change.path:
                running.remove(old_id)
        if change.kind == "delete":
            final[change.path] = None
            continue
        record_file = rec.load(change.path, repo.blob(change.new_sha))
        final[change.path] = record_file
        checked.append(record_file)
        entry = running.entry(record_file.id)
        if (
            change.kind == "add"
            and entry is not None
            and entry.get("path") != change.path
            and parent is not None
            and repo.blob_sha(parent, entry.get("path") or "") is not None
        ):
            what = f"id already belongs to {entry['path']}"
            findings.append(Finding(record_file.id, "ids", what, "id"))
    if checked:
        from gitkb.gates.registry import record_level

        store.at = parent
        # The gates judge the change as the admission it declares (insert, confirm, ...).
        actions = [value for key, value in commit.trailers if key == "KB-Action"]
        admission = {"admission": actions[0]} if actions and actions[0] in ACTIONS else {}
        ctx = GateContext(records=checked, store=store, extra=admission)
        findings += [f for result in run_gates(ctx, record_level()) for f in result.findings]
    for record_file in checked:
        if record_file.data is not None and isinstance(record_file.data.get("id"), str):
            running.put(rec.index_entry(record_file.data, record_file.path))
    return findings


def _trailer_findings(repo: _PushedRefs, commit: CommitInfo, changes: list) -> list[Finding]:
    """A commit that changes records, conflicts or ledgers says so in its trailers."""
    touched = {c.path for c in changes if c.path != INDEX_PATH}
    for other_parent in commit.parents[1:]:
        # A merge answers only for what it changed itself: paths differing from every parent.
        touched &= {
            c.path
            for prefix in (rec.RECORDS_DIR, CONFLICTS_DIR, LEDGER_DIR)
            for c in repo.changes(other_parent, commit.sha, prefix)
        }
    if not touched:
        return []
    ids = sorted({_id_of(path) for path in touched})
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


def _index_agreement(
    repo: _PushedRefs, tip: str, index: Index, final: dict, entry_changes: set[str]
) -> list[Finding]:
    """The index at the new tip agrees with every record the push changed and every
    record whose entry the push changed (the index gate's own comparison), and the links of
    the records it changed name records that exist there (the relations gate)."""
    from gitkb.gates.index import NAME, disagreements
    from gitkb.gates.relations import dangling_links

    findings: list[Finding] = []
    seen: set[str] = set()
    for path, record_file in final.items():
        if record_file is None:
            gone = _id_of(path)
            entry = index.entry(gone)
            if entry is not None and entry.get("path") == path:
                seen.add(gone)
                findings.append(Finding(gone, NAME, f"the index still lists {path}, now deleted"))
            continue
        if record_file.data is None:
            continue  # the schema gate has reported it
        seen.add(record_file.id)
        findings += disagreements(record_file.id, record_file.data, index.entry(record_file.id))
        # The relations gate, for the records the push changed: their links resolve at the tip.
        findings += dangling_links(record_file.id, record_file.data, index)
    for record_id in sorted(entry_changes - seen):
        entry = index.entry(record_id)
        if entry is None:
            continue  # an entry removed with its record is checked above; others are stale lines
        path = entry.get("path") or ""
        raw = repo.read(tip, path) if rec.is_record_path(path) else None
        if raw is None:
            findings.append(
                Finding(record_id, NAME, f"the index names {path!r}, which is no record")
            )
            continue
        record_file = rec.load(path, raw)
        if record_file.data is not None:
            findings += disagreements(record_id, record_file.data, entry)
    return findings


def _load_index(repo: _PushedRefs, commit: str | None) -> tuple[Index, Finding | None]:
    """The index at ``commit``; an unreadable one is an index finding."""
    if commit is None:
        return Index(), None
    raw = repo.read(commit, INDEX_PATH)
    if raw is None:
        return Index(), Finding(INDEX_PATH, "index", "records/index.json is missing")
    try:
        return read_index(raw), None
    except RecordError as exc:
        return Index(), Finding(INDEX_PATH, "index", exc.message)


def read_index(raw: bytes) -> Index:
    """Parse an index file. gitkb writes one entry per line (``Index.dumps``); such a file
    becomes an Index without decoding its entries, so a 10,000-record index costs a line
    split, not a JSON parse. Any other layout takes the JSON parser."""
    index = _read_line_layout(raw)
    if index is not None:
        return index
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"records/index.json is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != rec.SCHEMA_NAME:
        raise RecordError(f"records/index.json: index schema is not {rec.SCHEMA_NAME!r}")
    entries = data.get("records")
    if not isinstance(entries, list):
        raise RecordError("records/index.json: the index has no records list")
    index = Index()
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            index.put(entry)
    return index


def _read_line_layout(raw: bytes) -> Index | None:
    lines = raw.split(b"\n")
    try:
        start = lines.index(b' "records": [')
    except ValueError:
        return None
    if lines[0] != b"{" or lines[-3:] != [b" ]", b"}", b""]:
        return None
    try:
        header = json.loads(b"\n".join([*lines[:start], b' "records": []}']))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(header, dict) or header.get("schema") != rec.SCHEMA_NAME:
        return None
    body = lines[start + 1 : -3]
    entries: dict[str, bytes] = {}
    order: list[str] = []
    for n, line in enumerate(body):
        if n < len(body) - 1:
            if not line.endswith(b","):
                return None
            line = line[:-1]
        end = line.find(b'"', len(_LINE_HEAD))
        if not line.startswith(_LINE_HEAD) or not line.endswith(b"}") or end < 0:
            return None
        record_id = line[len(_LINE_HEAD) : end]
        if b"\\" in record_id or not rec.ID_PATTERN.fullmatch(record_id.decode("ascii", "replace")):
            return None
        key = record_id.decode("ascii")
        if key in entries:
            return None  # a repeated id: let the JSON path and the gates see the file
        entries[key] = line
        order.append(key)
    if order != sorted(order):
        return None
    return Index(lines=entries, order=order)


# --------------------------------------------------------------------------- trace refs


def _check_trace_ref(
    repo: _PushedRefs, update: RefUpdate, main_tip: str | None
) -> list[tuple[str, Finding]]:
    if update.old is None:
        return []
    if update.new is not None:
        if update.new == update.old:
            return []
        if _descends(list(repo.walk(update.new, exclude=(update.old,))), update.old):
            return []
    label = update.ref[len(TRACE_REFS) :]
    what = "deleted" if update.new is None else "rewritten (only fast-forwards are allowed)"
    sha = update.new or ZERO_SHA
    return [
        (sha, Finding(rid, "trace-refs", f"cites trace {label}, so {update.ref} cannot be {what}"))
        for rid in _records_citing(repo, main_tip, label)
    ]


def _records_citing(repo: _PushedRefs, tip: str | None, label: str) -> list[str]:
    """Ids of records at ``tip`` whose ``evidence.raw.source_repo`` is ``label``.

    Runs only when a trace ref is deleted or rewritten; a byte search skips the
    JSON parse of every record that does not mention the label.
    """
    if tip is None:
        return []
    needles = {label.encode(), json.dumps(label)[1:-1].encode()}
    found = []
    for path, sha in repo.list_tree(tip, rec.RECORDS_DIR):
        if not rec.is_record_path(path):
            continue
        raw = repo.blob(sha)
        if not any(n in raw for n in needles):
            continue
        record_file = rec.load(path, raw)
        raw_evidence = ((record_file.data or {}).get("evidence") or {}).get("raw")
        if isinstance(raw_evidence, dict) and raw_evidence.get("source_repo") == label:
            found.append(record_file.id)
    return found


# --------------------------------------------------------------------------- helpers


def admission_problems(message: str) -> list[tuple[str, str]]:
    """(record-id, what) for a message whose subject is an admission (``kb <action> <id>``)
    but whose final trailer block does not say the same action and record."""
    from gitkb.vcs.trailers import parse_trailers

    words = message.split("\n", 1)[0].split()
    if len(words) != 3 or words[0] != "kb":
        return []
    _, action, record_id = words
    trailers = parse_trailers(message)
    if not trailers:
        return [
            (record_id, f"subject 'kb {action} {record_id}' needs a final trailer block "
             "with KB-Action and KB-Record")
        ]  # fmt: skip
    problems = []
    actions = [v for k, v in trailers if k == "KB-Action"]
    if actions != [action]:
        problems.append((record_id, f"KB-Action is {_list(actions)}, the subject says {action}"))
    records = [v for k, v in trailers if k == "KB-Record"]
    # An init commit names the store in its subject and carries no KB-Record.
    if action != "init" and records != [record_id]:
        problems.append(
            (record_id, f"KB-Record is {_list(records)}, the subject names {record_id}")
        )
    return problems


def _id_of(path: str) -> str:
    """The record id a store path belongs to: ``records/../<id>.json``,
    ``conflicts/<id>.<n>.json``, ``ledger/<id>.jsonl``."""
    name = path.rsplit("/", 1)[-1]
    if path.startswith(CONFLICTS_DIR + "/"):
        stem = name.removesuffix(".json")
        head, _, n = stem.rpartition(".")
        return head if head and n.isdigit() else stem
    if path.startswith(LEDGER_DIR + "/"):
        return name.removesuffix(".jsonl")
    return name.removesuffix(".json")


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
