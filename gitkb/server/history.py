"""The store's history rules: what one commit may change (deny by default).

The gates judge a record's content; these rules judge a commit as a change to the
store. A commit's ``KB-Action`` names what it is, and each action may make exactly
the changes its row of ``ACTIONS`` allows, against its first parent; anything else
is refused (docs/sharing.md, "What a push may change"):

* entries first: every entry is a folder or a regular file (100644) at a path one
  of the layout's classes names (``PATH_CLASSES``), each name plain (no ``.``,
  ``..``, ``.git``, control bytes or case twins), no tree naming one entry twice;
* documents strict (``gitkb.record.strict``) and at most ``[store]
  max_record_bytes`` a record;
* nothing deleted or moved (a move is a delete); a record edited only in the
  fields the action owns, every other field equal as parsed JSON; ledgers and
  feedback logs only appended to, each new line a known kind of event;
* control files (``gitkb.toml``, ``.gitattributes``, ...) only as gitkb writes
  them (``gitkb.server.control``);
* an added record's id held by no other file, verified against the tree, never on
  a cache row alone.

A merge (a ``git pull`` in a clone) needs no trailers: its net change against its
first parent may bring what another parent already holds (that parent's commits
answer for it), records edited only in fields some action owns, and log lines a
parent holds; nothing dropped. ``check_commit`` is the one entry point: the server
hook (``gitkb.store.push``) and ``git kb validate --history`` call it, and local
writers build commits it accepts.
"""

from __future__ import annotations

import copy
import re
import stat
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from gitkb import layout
from gitkb import record as rec
from gitkb.access.signers import SIGNERS_PATH
from gitkb.gates import Finding
from gitkb.gates.anonymization import NAME, private_leaks
from gitkb.record import strict
from gitkb.record.index import INDEX_PATH
from gitkb.server import control
from gitkb.server.ids import IdLookup, admitting_commit
from gitkb.store.writer import message_problems
from gitkb.vcs import treediff
from gitkb.vcs.repository import CommitInfo, Repository
from gitkb.vcs.treediff import EntryChange, PathChange

# --------------------------------------------------------------------------- path classes

_SLUG = r"[a-z0-9][a-z0-9._-]*"
_LABEL = r"[A-Za-z0-9][A-Za-z0-9._-]*"
PATH_CLASSES = {
    "record": re.compile(rf"records/(?:{_SLUG}/){{5}}(?P<id>{_SLUG})\.json"),
    "index": re.compile(re.escape(INDEX_PATH)),
    "ledger": re.compile(rf"ledger/(?P<id>{_SLUG})\.jsonl"),
    "feedback": re.compile(rf"feedback/(?P<id>{_SLUG})\.jsonl"),
    "conflict": re.compile(rf"conflicts/(?P<id>{_SLUG})\.[1-9][0-9]*\.json"),
    "trace-options": re.compile(rf"traces/(?P<label>{_LABEL})\.json"),
    "report": re.compile(rf"reports/(?P<label>{_LABEL})/{_LABEL}"),
    "control": re.compile("|".join(re.escape(p) for p in control.CONTROL_FILES)),
    "access": re.compile(re.escape(SIGNERS_PATH)),
}
FOLDERS = re.compile(
    rf"records(?:/{_SLUG}){{0,5}}|ledger|feedback|conflicts|traces|reports(?:/{_LABEL})?|access"
    r"|\.github|\.github/workflows"
)
# Files held to gitkb's own rendering (``gitkb.server.control``).
_RENDERED = ("control", "access")
# Folders whose names may hold capitals, so two names may differ in case only.
_CASED = ("traces", "reports")
_JSON_CLASSES = ("record", "conflict", "trace-options")
LOGS = ("ledger", "feedback")  # append-only, union-merged
_FILE_MODE = 0o100644


def path_class(path: str) -> str | None:
    return next((name for name, p in PATH_CLASSES.items() if p.fullmatch(path)), None)


def _label(cls: str, path: str) -> str:
    """The label a labelled path class names in ``path`` (one ``path_class`` gave ``cls``)."""
    match = PATH_CLASSES[cls].fullmatch(path)
    if match is None:
        raise ValueError(f"{path} is no {cls} path")
    return match.group("label")


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class Allowed:
    """What one action may do: path classes it may add, replace or append to, the
    record fields it owns (dotted), what it may delete."""

    add: frozenset[str] = frozenset()
    replace: frozenset[str] = frozenset()
    append: frozenset[str] = frozenset()
    fields: tuple[str, ...] = ()
    delete: frozenset[str] = frozenset()


CONFIRM_FIELDS = ("worth.track.counters", "worth.track.confirm_keys")
RETRACT_FIELDS = ("status", "worth.rank.score")
_F = frozenset
ACTIONS = {
    "insert": Allowed(add=_F({"record"})),
    "confirm": Allowed(replace=_F({"record"}), fields=CONFIRM_FIELDS),
    "conflict": Allowed(add=_F({"conflict"})),
    "retract": Allowed(replace=_F({"record"}), append=_F({"ledger"}), fields=RETRACT_FIELDS),
    "unretract": Allowed(replace=_F({"record"}), append=_F({"ledger"}), fields=RETRACT_FIELDS),
    "attest": Allowed(append=_F({"ledger"})),
    "feedback": Allowed(append=_F({"feedback"})),
    # GPU-wiki and GEAK imports: new records and ledgers, confirmations of held ones.
    "import": Allowed(
        add=_F({"record"}), replace=_F({"record"}), append=_F({"ledger"}), fields=CONFIRM_FIELDS
    ),
    "trace": Allowed(add=_F({"trace-options"}), replace=_F({"trace-options"})),
    "report": Allowed(add=_F({"report"}), replace=_F({"report"})),
    "init": Allowed(add=_F({"control"})),
    "upgrade": Allowed(add=_F({"control"}), replace=_F({"control"}), delete=_F({"index"})),
    "config": Allowed(add=_F({"control"}), replace=_F({"control"})),
    # git kb access: the signers and gitkb.toml's [access] roles, in one commit.
    "access": Allowed(add=_F({"access"}), replace=_F({"access", "control"})),
}
# Actions that name a source (or a principal), not one record, in KB-Record.
BULK_ACTIONS = ("import", "init", "upgrade", "config", "access")
# Actions whose KB-Record is a trace label, and the path classes that label files.
LABEL_ACTIONS = {"trace": "trace-options", "report": "report"}
# What a log line may be: ledger events and feedback kinds gitkb writes.
LEDGER_EVENTS = ("attest", "attest-counts", "retract", "unretract")
FEEDBACK_KINDS = ("increment", "snapshot")


# --------------------------------------------------------------------------- the check


@dataclass
class Before:
    """The store a commit is checked against: the repository, the id checker (which
    answers from the tree) and the record size limit of the store's gitkb.toml."""

    repo: Repository
    ids: IdLookup
    max_record_bytes: int = strict.MAX_RECORD_BYTES
    # The documents read so far (blob sha -> bytes): the gates read them again.
    documents: dict[str, bytes] = field(default_factory=dict)

    # Each checked commit's entry diff against its first parent (the gates read it too).
    diffs: dict[str, list] = field(default_factory=dict)

    def changes(self, commit: CommitInfo) -> list:
        """Every entry ``commit`` changes against its first parent (``treediff.entry_diff``)."""
        if commit.sha not in self.diffs:
            parent = commit.parents[0] if commit.parents else None
            self.diffs[commit.sha] = treediff.entry_diff(self.repo, parent, commit.sha)
        return self.diffs[commit.sha]

    def document(self, sha: str) -> bytes:
        if sha not in self.documents:
            self.documents[sha] = self.repo.blob(sha)
        return self.documents[sha]


def check_commit(view: Before, commit: CommitInfo) -> list[Finding]:
    """Everything ``commit`` does that its action does not allow, against its first
    parent; empty when the commit is one the store accepts."""
    repo = view.repo
    changes = view.changes(commit)
    findings = [Finding(rid, "commit-msg", what) for rid, what in message_problems(commit.message)]
    files, laid_out = [], []
    for change in changes:
        refused = _entry_findings(change)
        findings += refused
        if change.problem or _is_dir(change):
            continue
        files.append(change)
        if not refused:
            laid_out.append(change)
    findings += _case_findings(repo, commit, files)
    merge = len(commit.parents) > 1
    action = None
    if not merge:
        action, action_findings = _action(commit, files)
        findings += action_findings
    # An entry the layout refuses is refused as such; its content is not judged.
    for change in laid_out:
        findings += _file_findings(view, commit, change, action, merge)
    if action is not None:
        findings += _orphan_log_findings(view, commit, laid_out)
    if merge:
        findings += _merge_drop_findings(repo, commit, {c.path for c in laid_out})
    regular = [c for c in files if c.new is None or c.new[0] == _FILE_MODE]
    findings += _id_findings(view, commit, regular)
    return findings


def _orphan_log_findings(
    view: Before, commit: CommitInfo, files: list[EntryChange]
) -> list[Finding]:
    """A ledger or feedback log grows only for a record the store holds (or this commit
    adds), verified against the tree."""
    parent = commit.parents[0] if commit.parents else None
    added = {
        layout.id_of(c.path) for c in files if c.kind == "add" and path_class(c.path) == "record"
    }
    findings = []
    for change in files:
        cls = path_class(change.path)
        record_id = layout.id_of(change.path)
        if cls in LOGS and change.new is not None and record_id not in added:
            if view.ids.holder(parent, record_id) is None:
                what = f"{change.path} logs for a record the store does not hold"
                findings.append(Finding(record_id, cls, what))
    return findings


def _merge_drop_findings(repo: Repository, commit: CommitInfo, judged: set[str]) -> list[Finding]:
    """What a merge leaves out of another parent: its records, conflicts and logs may
    not be dropped (a ``-s ours`` merge would quietly undo a clone's admissions)."""
    findings = []
    for other in commit.parents[1:]:
        dropped = (treediff.changes(repo, other, commit.sha, d) for d in layout.ADMITTED_DIRS)
        for change in (c for changes in dropped for c in changes):
            cls = path_class(change.path)
            if cls in LOGS and change.path not in judged and change.kind != "delete":
                findings += _log_findings(repo, commit, _as_entry(change), cls, None, True)
            elif change.kind == "delete" and change.path != INDEX_PATH:
                what = f"the merge drops {change.path}, which {other[:12]} holds"
                findings.append(Finding(layout.id_of(change.path), "history", what))
    return findings


def _as_entry(change: PathChange) -> EntryChange:
    old = (change.old_mode, change.old_sha) if change.old_sha else None
    new = (change.new_mode, change.new_sha) if change.new_sha else None
    return EntryChange(change.path, old, new)


def _is_dir(change: EntryChange) -> bool:
    side = change.new if change.new is not None else change.old
    return side is not None and stat.S_ISDIR(side[0])


def _entry_findings(change: EntryChange) -> list[Finding]:
    """Entry rules, before any content is read."""
    path = change.path
    rid = layout.id_of(path)
    if change.problem:
        return [Finding(rid, "entries", f"{path}: {change.problem}")]
    bad = bad_name(path)
    if bad:
        return [Finding("-", "entries", f"{path!r}: {bad}")]
    if change.new is None:
        return []  # a deletion: the allowlist answers for it
    mode = change.new[0]
    if stat.S_ISDIR(mode):
        if not FOLDERS.fullmatch(path):
            return [Finding(rid, "entries", f"{path}/ is no folder of the store's layout")]
        return []
    if mode != _FILE_MODE:
        kind = {0o120000: "a symlink", 0o160000: "a submodule (gitlink)",
                0o100755: "an executable file"}.get(mode, f"mode {mode:o}")  # fmt: skip
        return [Finding(rid, "entries", f"{path} is {kind}; the store holds regular files "
                        "(100644) only")]  # fmt: skip
    if path_class(path) is None:
        return [Finding(rid, "entries", f"{path} is no path of the store's layout")]
    return []


def _case_findings(repo: Repository, commit: CommitInfo, files: list[EntryChange]) -> list[Finding]:
    """Two names of one folder that differ in case only (one file on a case-insensitive
    disk); only the folders whose names may hold capitals can have them."""
    folders = {c.path.rsplit("/", 1)[0] for c in files if c.kind == "add" and "/" in c.path}
    folders = {f for f in folders if f.split("/", 1)[0] in _CASED}
    folders |= {f.rsplit("/", 1)[0] for f in folders if "/" in f}
    findings = []
    for folder in sorted(folders):
        tree = repo.subtree(commit.sha, folder)
        names = sorted(repo.tree_entries(tree)) if tree else []
        folded = Counter(name.casefold() for name in names)
        twins = [name for name in names if folded[name.casefold()] > 1]
        if twins:
            what = f"{folder}/ holds {', '.join(twins)}: names that differ in case only"
            findings.append(Finding("-", "entries", what))
    return findings


def bad_name(path: str) -> str | None:
    for name in path.split("/"):
        if name in ("", ".", ".."):
            return f"a path component is {name!r}"
        if name.lower() == ".git" or name.lower().startswith(".git/"):
            return "a path component is .git"
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F or "\udc80" <= ch <= "\udcff" for ch in name):
            return "a name holds control bytes or bytes that are not UTF-8"
        if "\\" in name:
            return "a name holds a backslash"
    return None


def _action(commit: CommitInfo, files: list[EntryChange]) -> tuple[str | None, list[Finding]]:
    """The commit's action and what its trailers get wrong about the files it changes."""
    touched = sorted(c.path for c in files)
    trailers: dict[str, list[str]] = {}
    for key, value in commit.trailers:
        trailers.setdefault(key, []).append(value)
    actions = trailers.get("KB-Action")
    if not actions:
        if not touched:
            return None, []
        more = f" and {len(touched) - 1} more files" if len(touched) > 1 else ""
        what = f"changes {touched[0]}{more} but carries no KB-Action trailer"
        return None, [Finding(layout.id_of(touched[0]), "trailers", what)]
    action = actions[0]
    if action not in ACTIONS:
        known = ", ".join(sorted(ACTIONS))
        return None, [Finding("-", "actions", f"KB-Action {action!r} is no action ({known})")]
    if action in BULK_ACTIONS:
        return action, []
    named = set(trailers.get("KB-Record", []))
    findings = []
    for change in files:
        cls = path_class(change.path)
        if cls is not None and LABEL_ACTIONS.get(action) == cls:
            label = _label(cls, change.path)
            if label not in named:
                what = f"{change.path}: changed by a commit whose KB-Record names {_list(named)}"
                findings.append(Finding(label, "trailers", what))
            continue
        rid = layout.id_of(change.path)
        if rid not in named:
            what = f"changed by a commit whose KB-Record names {_list(named)}"
            findings.append(Finding(rid, "trailers", what))
    return action, findings


def _file_findings(
    view: Before, commit: CommitInfo, change: EntryChange, action: str | None, merge: bool
) -> list[Finding]:
    path, cls = change.path, path_class(change.path)
    rid = layout.id_of(path)
    repo = view.repo
    if cls == "index":
        return _index_findings(repo, commit, change, action)
    if merge and _another_parent_holds(repo, commit, change):
        return _document_findings(view, change, cls)
    if change.kind == "delete":
        if merge or cls not in ACTIONS.get(action or "", Allowed()).delete:
            what = f"{path} is deleted; the store has no delete (a move is a delete too)"
            return [Finding(rid, "history", what)]
        return []
    findings = _document_findings(view, change, cls) or _report_findings(view, change, cls)
    if findings:
        return findings
    if cls in LOGS:
        return _log_findings(repo, commit, change, cls, action, merge)
    if merge:
        if change.kind == "modify" and cls == "record":
            return _field_findings(repo, change, CONFIRM_FIELDS + RETRACT_FIELDS, "a merge")
        what = f"{path}: the merge brings a version no parent holds"
        return [Finding(rid, "history", what)]
    if action is None:
        return []  # the trailer rule reported it
    allowed = ACTIONS[action]
    if change.kind == "add" and cls in allowed.add:
        return control.findings(repo, commit, path) if cls in _RENDERED else []
    if change.kind == "modify" and cls in allowed.replace:
        if cls == "record" and allowed.fields:
            return _field_findings(repo, change, allowed.fields, f"kb {action}")
        return control.findings(repo, commit, path) if cls in _RENDERED else []
    verb = {"add": "add", "modify": "change"}[change.kind]
    what = f"kb {action} may not {verb} {path} (a {cls} file)"
    return [Finding(rid, "history", what)]


def _index_findings(
    repo: Repository, commit: CommitInfo, change: EntryChange, action: str | None
) -> list[Finding]:
    """records/index.json may leave history (``kb upgrade``) or stay in a format-1 store
    (its writers kept it current); it never comes back."""
    if change.kind == "delete":
        if action == "upgrade" or _another_parent_holds(repo, commit, change):
            return []
        return [Finding(INDEX_PATH, "history", f"{INDEX_PATH} leaves only by kb upgrade")]
    if change.kind == "add" and not _another_parent_holds(repo, commit, change):
        what = (
            "records/index.json is derived data and stays out of history (store format 2); "
            "git kb export gpu-wiki writes one"
        )
        return [Finding(INDEX_PATH, "index", what)]
    return []


def _another_parent_holds(repo: Repository, commit: CommitInfo, change: EntryChange) -> bool:
    """Whether another parent of a merge holds the merge's version of the path (that
    parent's own commits answered for it)."""
    new_sha = change.new[1] if change.new else None
    return any(repo.blob_sha(other, change.path) == new_sha for other in commit.parents[1:])


def _document_findings(view: Before, change: EntryChange, cls: str | None) -> list[Finding]:
    """A JSON document added or replaced parses strictly, a record within the size limit."""
    if change.new is None or cls not in _JSON_CLASSES:
        return []
    limit = view.max_record_bytes if cls == "record" else strict.MAX_RECORD_BYTES
    size = view.repo.blob_size(change.new[1])
    rid = layout.id_of(change.path)
    if size > limit:
        what = (
            f"{change.path} is {size} bytes, over the limit of {limit} ([store] max_record_bytes)"
        )
        return [Finding(rid, "strict", what)]
    try:
        strict.loads(view.document(change.new[1]))
    except strict.StrictError as exc:
        return [Finding(rid, "strict", f"{change.path}: {exc}")]
    return []


def _report_findings(view: Before, change: EntryChange, cls: str | None) -> list[Finding]:
    """A report added or replaced holds nothing private (gitkb scrubs the reports it
    writes, rule 11; one pushed by hand is held to the same)."""
    if cls != "report" or change.new is None:
        return []

    text = view.repo.blob(change.new[1]).decode("utf-8", "replace")
    rid = layout.id_of(change.path)
    return [Finding(rid, NAME, f"{change.path}: {leak}") for leak in private_leaks(text)[:5]]


def _field_findings(
    repo: Repository, change: EntryChange, fields: tuple[str, ...], who: str
) -> list[Finding]:
    """A record edit touches only ``fields``: every other field equal as parsed JSON."""
    rid = layout.id_of(change.path)
    try:
        old = strict.loads(_blob(repo, change.old))
        new = strict.loads(_blob(repo, change.new))
    except strict.StrictError as exc:
        return [Finding(rid, "fields", f"{change.path}: the stored record does not parse ({exc})")]
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [Finding(rid, "fields", f"{change.path}: a record is a JSON object")]
    left, right = _without(old, fields), _without(new, fields)
    if left == right:
        return []
    where = _first_difference(left, right)
    owned = ", ".join(fields)
    what = f"{who} may change {owned} only; it changes {where}"
    return [Finding(rid, "fields", what, where)]


def _without(record: dict, fields: tuple[str, ...]) -> dict:
    out = copy.deepcopy(record)
    for dotted in fields:
        *parents, leaf = dotted.split(".")
        node: object = out
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    # A confirmation may make an empty worth.track.prior where the record had none.
    track = rec.dig(out, "worth", "track")
    if isinstance(track, dict) and track.get("prior") == {}:
        track.pop("prior")
    return out


def _first_difference(a: object, b: object, at: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key, _MISSING) != b.get(key, _MISSING):
                return _first_difference(a.get(key), b.get(key), f"{at}.{key}" if at else key)
    return at or "the record"


_MISSING = object()


def _blob(repo: Repository, side: tuple[int, str] | None) -> bytes:
    """The bytes of one side of a change; a side with no entry reads as empty."""
    return b"" if side is None else repo.blob(side[1])


def _log_findings(
    repo: Repository,
    commit: CommitInfo,
    change: EntryChange,
    cls: str,
    action: str | None,
    merge: bool,
) -> list[Finding]:
    """Logs only grow: an ordinary commit appends lines its action may write, each a
    known kind of event; a merge keeps every parent's lines and adds none of its own."""
    rid = layout.id_of(change.path)
    new, old = _blob(repo, change.new), _blob(repo, change.old)
    if merge:
        merged = Counter(new.splitlines())
        sides = [repo.read(p, change.path) or b"" for p in commit.parents]
        for side in sides:
            if Counter(side.splitlines()) - merged:
                return [Finding(rid, cls, f"{change.path}: the merge dropped lines a parent holds")]
        if merged - sum((Counter(s.splitlines()) for s in sides), Counter()):
            return [Finding(rid, cls, f"{change.path}: the merge added lines of its own")]
        return []
    if action is not None and cls not in ACTIONS[action].append:
        return [Finding(rid, "history", f"kb {action} may not write {change.path}")]
    if not new.startswith(old) or (old and not old.endswith(b"\n")):
        return [Finding(rid, cls, f"{change.path}: lines were changed or removed")]
    for number, line in enumerate(new[len(old) :].splitlines(), old.count(b"\n") + 1):
        problem = line_problem(cls, line)
        if problem:
            return [Finding(rid, cls, f"{change.path} line {number}: {problem}")]
    return []


def line_problem(cls: str, line: bytes) -> str | None:
    """Why one new ledger or feedback line is refused, or None."""
    try:
        event = strict.loads(line, strict.MAX_LINE_BYTES)
    except strict.StrictError as exc:
        return str(exc)
    if not isinstance(event, dict):
        return "a log line is one JSON object"
    known: tuple[str, ...]
    if cls == "ledger":
        kind, known = event.get("event"), LEDGER_EVENTS
    else:
        kind, known = event.get("kind"), FEEDBACK_KINDS
    if kind not in known:
        return f"{kind!r} is no kind of {cls} line ({', '.join(known)})"
    return None


# --------------------------------------------------------------------------- ids


def _id_findings(view: Before, commit: CommitInfo, files: list[EntryChange]) -> list[Finding]:
    """An added record may not take an id another file holds, in the store before the
    commit or twice within it; the finding names both commits and the way out."""
    parent = commit.parents[0] if commit.parents else None
    added = [c.path for c in files if c.kind == "add" and rec.is_record_path(c.path)]
    findings = []
    counts = Counter(p.rsplit("/", 1)[-1] for p in added)
    for path in added:
        record_id = layout.id_of(path)
        if counts[path.rsplit("/", 1)[-1]] > 1:
            what = f"{counts[path.rsplit('/', 1)[-1]]} files of this commit hold this id"
            findings.append(Finding(record_id, "ids", what, "id"))
            continue
        other = view.ids.holder(parent, record_id)
        if parent is None or other is None or other == path:
            continue  # a root commit has no store before it
        first = admitting_commit(view.repo, parent, other)
        what = (
            f"already in the store at {other} (admitted by {first[:12]}); "
            f"{commit.sha[:12]} admits it again at {path}. "
            f"In the clone that made {commit.sha[:12]}: git kb renumber {record_id}, "
            "then push again"
        )
        findings.append(Finding(record_id, "ids", what, "id"))
    view.ids.note(commit, added)
    return findings


def _list(values: Iterable[str]) -> str:
    values = sorted(set(values))
    return ", ".join(values) if values else "nothing"
