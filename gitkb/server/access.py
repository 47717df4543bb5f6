"""Who may make a commit: its SSH signature, checked by git against the access files of
its first parent (``access/allowed_signers``, ``gitkb.toml [access]``), so no commit
grants itself a role; the role its change needs is the table in docs/hosting.md.

* contributor: insert, confirm, conflict, attest, feedback, mining commits;
* curator: and retract, unretract (a record's status or score, a ledger's retract
  lines), technique cards (``curate --apply``);
* admin: and every control file, ``access/*``, ``init``, ``upgrade``, ``config``.

A merge needs the role of its net change against its first parent, signed on the
merge, unless it adds nothing of its own (``gitkb.server.merges``): then each commit it
brings needs its signer to hold, by the merge's first parent's rules, the role that
commit's change needs. The commit that turns access on (its parent has no ``access/``)
needs an admin the server's anchor names (``git kb hooks install --server --admins
FILE``); where there is no server (``git kb check`` on a forge, ``git kb validate
--history`` on a clone) it answers to the admins it names itself (``anchor``). A store
without ``access/`` is judged as before: signatures optional, no roles.
"""

from __future__ import annotations

import datetime as dt
import json
import tomllib
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from gitkb import layout
from gitkb import record as rec
from gitkb.access import policy, signers
from gitkb.access.policy import Policy
from gitkb.access.signers import SIGNERS_PATH, AllowedSigner, SignersError
from gitkb.gates import Finding
from gitkb.server import history, merges
from gitkb.server.bounds import Budget
from gitkb.vcs import signing
from gitkb.vcs.repository import CommitInfo, Repository
from gitkb.vcs.signing import Signature
from gitkb.vcs.treediff import EntryChange

ADMIN_ACTIONS = ("init", "upgrade", "config", "access")
CURATOR_ACTIONS = ("retract", "unretract")
CARD_TYPE = "technique-card"
_RENDERED = ("control", "access")
_CURATOR_EVENTS = ("retract", "unretract")


@dataclass(frozen=True)
class Rules:
    """The access files a commit is judged by: the signers file's bytes, its lines, the
    policy, and how a refusal names them (``judge``)."""

    raw: bytes
    listed: tuple[AllowedSigner, ...]
    policy: Policy
    judge: str

    def signer(self, signature: Signature, when: int) -> tuple[str, str]:
        """(who, why): the principal a refusal names (the signer, or ``unsigned``,
        ``unknown key``, ``expired key``, ``not yet valid key``, ``bad signature``) and,
        where there is no good signature, what is wrong with it (``when``: the commit's
        own time, which git checks the key's window against)."""
        if signature.state == "good":
            return signature.principal, ""
        if signature.state == "unsigned":
            return "unsigned", "the commit is unsigned"
        if signature.state == "bad" and not signature.key:
            return "unsigned", "its signature is no SSH signature (an OpenPGP or X.509 one)"
        if signature.state == "bad":
            return "bad signature", "the signature does not verify (changed after signing)"
        lines = [s for s in self.listed if s.fingerprint == signature.key]
        if not lines:
            return "unknown key", f"its key {signature.key} is listed for no one"
        at = signers.utc_stamp(dt.datetime.fromtimestamp(when, dt.UTC))
        ended = [s for s in lines if s.valid_before and s.valid_before <= at]
        if ended:
            last = max(ended, key=lambda s: s.valid_before)
            return (
                "expired key",
                f"{last.principal}'s key's window ended at {_day(last.valid_before)}",
            )
        starts = min((s for s in lines if s.valid_after), key=lambda s: s.valid_after, default=None)
        if starts is not None:
            return (
                "not yet valid key",
                f"{starts.principal}'s key's window starts at {_day(starts.valid_after)}",
            )
        return (
            "unknown key",
            f"its key {signature.key} does not verify for the principal listed with it",
        )


def _day(stamp: str) -> str:
    """``YYYYMMDDHHMMSSZ`` as a reader writes it: ``YYYY-MM-DD HH:MM:SS UTC``."""
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[8:10]}:{stamp[10:12]}:{stamp[12:14]} UTC"


def rules_at(repo: Repository, commit: str | None) -> Rules | None:
    """The access rules at ``commit``; None where access is off there (no signers file).
    A file that does not parse allows no one (the history rules name its line)."""
    raw = repo.read(commit, SIGNERS_PATH) if commit is not None else None
    if commit is None or raw is None:
        return None
    judge = f"{SIGNERS_PATH} at {commit[:12]}"
    try:
        listed = tuple(signers.parse(raw))
    except SignersError:
        return Rules(b"", (), Policy(require_signed=True), judge)
    config = repo.read(commit, layout.CONFIG_PATH)
    try:
        parsed = tomllib.loads((config or b"").decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        parsed = {}
    return Rules(raw, listed, policy.policy_of(parsed), judge)


def anchor(repo: Repository, server: bool) -> bytes | None:
    """Who may turn access on, as ``findings`` takes it: the allowed-signers lines the
    repository's own config holds (``git kb hooks install --server --admins FILE``). Where
    it holds none, a server (``server``) lets no one (b""); anywhere else, a forge's check
    or a clone's replay, the commit answers to the admins it names itself (None): on a
    forge, who may merge into the protected base branch is the anchor."""
    held = signing.read_anchor(repo.git_dir)
    return held if held or server else None


@dataclass(frozen=True)
class Judging:
    """The commits ``findings`` judges, each with the rules it answers to, and their
    signatures being checked meanwhile (``begin``)."""

    judged: tuple[tuple[CommitInfo, Rules], ...]
    turning_on: frozenset[str]
    signatures: Future[dict[tuple[bytes, str], Signature]]


def begin(
    repo: Repository, commits: list[CommitInfo], anchor: bytes | None, budget: Budget | None = None
) -> Judging:
    """Start judging ``commits`` (oldest first; ``anchor`` as ``findings`` takes it): the
    rules each answers to, and ``ssh-keygen`` checking their signatures in the background,
    so a push's other checks run while it waits on those processes."""
    judged: list[tuple[CommitInfo, Rules]] = []
    turning_on = set()
    for commit in commits:
        parent = commit.parents[0] if commit.parents else None
        rules = rules_at(repo, parent)
        if rules is not None:
            judged.append((commit, rules))
            continue
        turned_on = rules_at(repo, commit.sha)
        if turned_on is not None:
            # Access is turned on: the anchor's admins (else the commit's own) decide.
            turning_on.add(commit.sha)
            judged.append((commit, _turning_on(turned_on, anchor)))
    groups = _signed_groups(repo, judged, {})  # read here: the repository is not shared
    signatures: Future[dict[tuple[bytes, str], Signature]] = Future()
    if groups:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitkb-verify")
        signatures = pool.submit(_verify, groups, budget)
        pool.shutdown(wait=False)  # the check goes on; ``findings`` waits for the answer
    else:
        signatures.set_result({})  # access is off: nothing to check
    return Judging(tuple(judged), frozenset(turning_on), signatures)


def findings(
    before: history.Before,
    commits: list[CommitInfo],
    anchor: bytes | None,
    landed: Mapping[str, str] | None = None,
    budget: Budget | None = None,
    begun: Judging | None = None,
) -> list[tuple[str, Finding]]:
    """Each commit (oldest first) its signer may not make, as (commit, finding).
    ``anchor``: the server's admins (allowed-signers bytes) for the commit that turns
    access on; None: that commit answers to the admins it names itself. A merge that
    adds nothing of its own (``merges.adds_nothing``: a forge's merge button makes such
    merges, signed by no one here) needs no signature where each commit of its push
    that it brings is signed by one whom the merge's first parent's rules give the role
    that commit's own change needs (``landed``: which push brought each commit,
    ``merges.pushes_along``; None: ``commits`` are one push). ``budget``: the server's
    bounds, whose time left the signature check gets. ``begun``: the same judging
    started earlier (``begin``)."""
    repo = before.repo
    judging = begun or begin(repo, commits, anchor, budget)
    signatures = judging.signatures.result()
    found: dict[str, list[Finding]] = {}
    bringing: list[tuple[CommitInfo, Rules]] = []
    for commit, rules in judging.judged:
        first = commit.sha in judging.turning_on
        need = Need("admin", "turning access on", SIGNERS_PATH) if first else None
        need = need or needed_role(before, commit)
        finding = _verdict(commit, rules, signatures[rules.raw, commit.sha], need)
        if finding is not None and merges.adds_nothing(repo, commit):
            # What it brings answers for it (turning access on: its first parent has no
            # access files, and each commit it brings was judged as it stands).
            bringing += [] if first else [(commit, rules)]
        elif finding is not None:
            found[commit.sha] = [finding]
    if bringing:
        found |= _brought_findings(before, commits, bringing, landed, signatures, budget)
    return [(commit.sha, f) for commit, _ in judging.judged for f in found.get(commit.sha, ())]


def _brought_findings(
    before: history.Before,
    commits: list[CommitInfo],
    bringing: list[tuple[CommitInfo, Rules]],
    landed: Mapping[str, str] | None,
    signatures: dict[tuple[bytes, str], Signature],
    budget: Budget | None,
) -> dict[str, list[Finding]]:
    """For each merge that adds nothing of its own but is not signed by one who may make
    its net change: a finding for each commit of its push it brings that the merge's
    first parent's rules (``rules``) do not let its signer make. A merge it brings that
    adds nothing of its own is no one's change; what that merge brings is brought here
    too."""
    repo = before.repo
    pushes: dict[str, dict[str, CommitInfo]] = {}
    for commit in commits:
        pushes.setdefault(landed.get(commit.sha, "") if landed else "", {})[commit.sha] = commit
    wanted: list[tuple[CommitInfo, CommitInfo, Rules]] = []
    for merge, rules in bringing:
        push = pushes[landed.get(merge.sha, "") if landed else ""]
        ids = merges.brought_in(merge, push)
        for commit in (c for c in commits if c.sha in ids):
            if len(commit.parents) < 2 or not merges.adds_nothing(repo, commit):
                wanted.append((merge, commit, rules))
    brought = _signed_groups(repo, [(c, rules) for _, c, rules in wanted], signatures)
    signatures = signatures | _verify(brought, budget)
    out: dict[str, list[Finding]] = {}
    for merge, commit, rules in wanted:
        need = needed_role(before, commit)
        what = f"{need.what} ({commit.sha[:12]}, brought in by a merge)"
        finding = _verdict(
            commit, rules, signatures[rules.raw, commit.sha], replace(need, what=what)
        )
        if finding is not None:
            out.setdefault(merge.sha, []).append(finding)
    return out


def _signed_groups(
    repo: Repository,
    judged: Iterable[tuple[CommitInfo, Rules]],
    known: dict[tuple[bytes, str], Signature],
) -> dict[bytes, dict[str, bytes]]:
    """The commits whose signatures are to be checked, not ``known`` already, by the
    signers file they answer to: signers file -> commit id -> the commit's bytes."""
    groups: dict[bytes, dict[str, bytes]] = {}
    for commit, rules in judged:
        if (rules.raw, commit.sha) not in known:
            groups.setdefault(rules.raw, {})[commit.sha] = repo.raw(commit.sha)
    return groups


def _verify(
    groups: dict[bytes, dict[str, bytes]], budget: Budget | None
) -> dict[tuple[bytes, str], Signature]:
    """Each commit's signature checked against its signers file (``_signed_groups``), as
    (signers file, commit) -> Signature; one ``signing.verify`` per file, each given the
    time ``budget`` has left (past it: OverBound)."""
    out: dict[tuple[bytes, str], Signature] = {}
    for raw, group in groups.items():
        if budget is None:
            verified = signing.verify(group, raw)
        else:
            budget.tick()
            try:
                verified = signing.verify(group, raw, budget.remaining())
            except signing.VerifyTimedOut:
                raise budget.out_of_time() from None
        out |= {(raw, sha): verified.get(sha, Signature("bad")) for sha in group}
    return out


def _turning_on(own: Rules, anchor: bytes | None) -> Rules:
    """The rules the commit turning access on answers to: the server's anchor, or (None:
    no server) the access files it adds itself."""
    if anchor is None:
        return Rules(own.raw, own.listed, own.policy, "the access files it adds (no server anchor)")
    listed = tuple(signers.parse_anchor(anchor.decode())) if anchor else ()
    admins = tuple(sorted({s.principal for s in listed}))
    judge = "the server's anchor (git kb hooks install --server --admins FILE)"
    if not anchor:
        judge = "the server's anchor, which names no admin (hooks install --server --admins FILE)"
    return Rules(signers.render(list(listed)), listed, Policy(True, (), admins), judge)


def _verdict(commit: CommitInfo, rules: Rules, signature: Signature, need: Need) -> Finding | None:
    """The refusal of ``commit``, whose change needs ``need``, by its ``signature`` under
    ``rules``; None where the signer may make it."""
    needed = need.role
    who, wrong = rules.signer(signature, commit.commit_time)
    if signature.state == "good":
        role = rules.policy.role_of(who)
        if policy.at_least(role, needed):
            return None
        why = f"{who} is a {role}"
    elif who == "unsigned" and rules.policy.require_signed:
        why = f"{wrong} and this store requires signed commits ([access] require_signed)"
    elif who == "unsigned" and needed == "contributor":
        return None  # signatures optional: an unsigned contributor's change is anyone's
    elif who == "unsigned":
        why = f"{wrong}; only a signed commit carries a role"
    else:
        why = wrong
    article = "an" if needed == "admin" else "a"
    line = (
        f"{who}: {need.what} needs {article} {needed}'s signature ({why}; judged by {rules.judge})"
    )
    return Finding(need.path, "access", line)


@dataclass(frozen=True)
class Need:
    """The role a commit's change needs, what needs it, and the file it needs it for
    ("-" where its action alone does): a refusal names that file, so a forge's report
    points at it."""

    role: str
    what: str
    path: str = "-"


def needed_role(before: history.Before, commit: CommitInfo) -> Need:
    """What the change ``commit`` makes against its first parent needs: the highest of
    its action's and its paths' roles, named by the first that needs it, at the first
    file that needs it (a record's own file before its log's)."""
    action = dict(commit.trailers).get("KB-Action") if len(commit.parents) < 2 else None
    found = [Need("contributor", f"kb {action}" if action else "a merge")]
    if action in ADMIN_ACTIONS:
        found.append(Need("admin", f"kb {action}"))
    elif action in CURATOR_ACTIONS:
        found.append(Need("curator", f"kb {action}"))
    merge = len(commit.parents) > 1
    for change in before.changes(commit):
        if not change.problem and not change.is_dir(change.new or change.old):
            role, what = _path_role(before.repo, change)
            found.append(Need(role, f"a merge bringing {what}" if merge else what, change.path))
    top = max(policy.ROLES.index(need.role) for need in found)
    needs = [need for need in found if policy.ROLES.index(need.role) == top]
    files = sorted(
        (n for n in needs if n.path != "-"), key=lambda n: not rec.is_record_path(n.path)
    )
    return Need(needs[0].role, needs[0].what, files[0].path if files else "-")


def _path_role(repo: Repository, change: EntryChange) -> tuple[str, str]:
    cls = history.path_class(change.path)
    if cls is None or cls in _RENDERED:
        return "admin", f"a change to {change.path}"
    if cls == "record" and change.new is not None:
        if change.kind == "add" and change.path.split("/")[1] == CARD_TYPE:
            return "curator", f"a technique card ({layout.id_of(change.path)})"
        if change.kind == "modify" and _status_moves(repo, change):
            return "curator", f"a retraction or its lifting ({layout.id_of(change.path)})"
    if cls == "ledger" and change.new is not None and _curator_lines(repo, change):
        return "curator", f"a retract line in {change.path}"
    return "contributor", ""


def _status_moves(repo: Repository, change: EntryChange) -> bool:
    """Whether a record edit moves its status or score (what retract and unretract own)."""
    try:
        old = json.loads(repo.blob(change.old[1])) if change.old else None
        new = json.loads(repo.blob(change.new[1])) if change.new else None
    except ValueError:
        return True  # unreadable: the history rules refuse it; no lower role answers
    return any(rec.dig(old, *f.split(".")) != rec.dig(new, *f.split("."))
               for f in history.RETRACT_FIELDS)  # fmt: skip


def _curator_lines(repo: Repository, change: EntryChange) -> bool:
    old = repo.blob(change.old[1]) if change.old else b""
    new = repo.blob(change.new[1]) if change.new else b""
    added = new[len(old) :] if new.startswith(old) else new
    for line in added.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the history rules refuse it
        if isinstance(event, dict) and event.get("event") in _CURATOR_EVENTS:
            return True
    return False
