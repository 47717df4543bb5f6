"""``git kb check BASE..HEAD``: the verdict the server would give a push of HEAD onto
BASE, for a forge that runs no server hooks. The verdict is the server's own
(``receive.check_push``, the entry point the pre-receive hook calls: history rules,
access, gates, trace refs), so a check and a push never disagree; this module only
reads the range, names what the repository lacks to judge it (the trace refs and trace
commits its records cite) and ties each refusal to the file it is about."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitkb import layout
from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.server import access
from gitkb.server.receive import RefUpdate, check_push, cites
from gitkb.vcs import treediff
from gitkb.vcs.repository import Repository
from gitkb.vcs.revisions import commit_of

# Which rule a refusal line names: ``<ref> <commit>: <subject>: <rule>: <what>``
# (``receive.PushCheck``), the subject a record id, a path, a trace label or ``-``.
_LINE = re.compile(r"(?P<ref>\S+) (?P<commit>[0-9a-f]{40}): (?P<subject>.*?): (?P<rule>[\w-]+): ")


@dataclass(frozen=True)
class Refusal:
    """One line of the server's refusal, as the pre-receive hook prints it (``line``),
    and what it is about: the rule, the subject and (where there is one) the file."""

    line: str
    rule: str
    subject: str
    commit: str
    path: str  # "" where the refusal is about no one file (a ref, the history)
    waits_on_trace: bool  # about a record whose cited trace this repository lacks


@dataclass(frozen=True)
class MissingTrace:
    """A trace commit a record of the range cites that this repository cannot show is
    reached by its trace ref: the ref is absent, the commit is absent, or the ref does
    not reach it."""

    label: str
    commit: str
    what: str  # "ref", "object" or "unreached"
    records: tuple[str, ...]
    path: str

    @property
    def ref(self) -> str:
        return layout.trace_ref(self.label)

    def line(self) -> str:
        cited = f"cited by {', '.join(self.records)}"
        if self.what == "ref":
            return f"missing trace ref {self.ref} ({cited}, at {self.commit})"
        if self.what == "object":
            return f"missing trace object {self.commit} of {self.ref} ({cited})"
        return f"{self.ref} does not reach trace commit {self.commit} ({cited})"


@dataclass
class Verdict:
    """The check of one range: the refusals the server would give, and the traces it
    could not judge. Exit status: 1 when the server would refuse for a reason of its
    own, 2 when only missing traces stand in the way, 0 when the range is clean."""

    base: str
    head: str
    refusals: list[Refusal] = field(default_factory=list)
    missing: list[MissingTrace] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if any(not r.waits_on_trace for r in self.refusals):
            return 1
        return 2 if self.missing else 0

    @property
    def outcome(self) -> str:
        return {0: "clean", 1: "refused", 2: "missing traces"}[self.exit_code]

    def as_json(self) -> dict:
        return {
            "base": self.base,
            "head": self.head,
            "outcome": self.outcome,
            "exit": self.exit_code,
            "refusals": [r.__dict__ for r in self.refusals],
            "missing": [{**m.__dict__, "ref": m.ref, "line": m.line()} for m in self.missing],
        }


def parse_range(repo: Repository, text: str) -> tuple[str, str]:
    """The (base, head) commits of ``BASE..HEAD``; a bad range or an unknown revision is
    one error naming it."""
    base_name, dots, head_name = text.partition("..")
    if not dots or head_name.startswith(".") or not base_name or not head_name:
        raise GitkbError(f"{text!r} is not a range: give BASE..HEAD (two revisions)")
    ends = []
    for name in (base_name, head_name):
        sha = commit_of(repo, name)
        if sha is None:
            raise GitkbError(f"{text}: {name!r} names no commit in {repo.git_dir}")
        ends.append(sha)
    base, head = ends
    if repo.read(base, layout.CONFIG_PATH) is None:
        raise GitkbError(f"{text}: {base_name} ({base[:12]}) holds no store (no gitkb.toml)")
    return base, head


def check_range(repo: Repository, base: str, head: str) -> Verdict:
    """What the server would say to a push moving main from ``base`` to ``head``, with
    the trace refs as this repository holds them. The commit that turns access on
    answers to this repository's anchor where it has one, else (a forge's check, where the
    protected base branch is the anchor) to the admins it names itself, as in ``git kb
    validate --history``."""
    held = repo.with_refs({layout.BRANCH: base})
    update = RefUpdate(base, head, layout.BRANCH)
    push = check_push([update], held, anchor=access.anchor(repo, server=False))
    paths, citing = _range_files(repo, base, head)
    missing = _missing_traces(repo, push.cited, citing, paths)
    waiting = {record_id for m in missing for record_id in m.records}
    verdict = Verdict(base, head, missing=missing)
    for line in push.problems:
        parsed = _LINE.match(line)
        subject = parsed["subject"] if parsed else ""
        verdict.refusals.append(
            Refusal(
                line=line,
                rule=parsed["rule"] if parsed else "",
                subject=subject,
                commit=parsed["commit"] if parsed else "",
                path=subject if subject in paths.values() else paths.get(subject, ""),
                waits_on_trace=subject in waiting,
            )
        )
    return verdict


def _range_files(
    repo: Repository, base: str, head: str
) -> tuple[dict[str, str], dict[tuple[str, str], list[str]]]:
    """The files the range changes, by the subject the rules name them by
    (``layout.id_of``: a record's own file first), and each (trace label, commit) its
    records cite, with the ids citing it."""
    paths: dict[str, str] = {}
    citing: dict[tuple[str, str], list[str]] = {}
    for change in treediff.changes(repo, base, head):
        key = layout.id_of(change.path)
        if rec.is_record_path(change.path) or key not in paths:
            paths[key] = change.path
        if change.new_sha is None or not rec.is_record_path(change.path):
            continue
        record_file = rec.load(change.path, repo.blob(change.new_sha))
        for pair in cites(record_file.data):
            citing.setdefault(pair, []).append(record_file.id)
    return paths, citing


def _missing_traces(
    repo: Repository,
    cited: set[tuple[str, str]],
    citing: dict[tuple[str, str], list[str]],
    paths: dict[str, str],
) -> list[MissingTrace]:
    missing = []
    for label, commit in sorted(cited | set(citing)):
        tip = repo.resolve(layout.trace_ref(label))
        if tip is None:
            what = "ref"
        elif not repo.has_object(commit):
            what = "object"
        elif not repo.is_ancestor(commit, tip):
            what = "unreached"
        else:
            continue
        ids = tuple(sorted(citing.get((label, commit), ())))
        missing.append(MissingTrace(label, commit, what, ids, paths.get(ids[0], "") if ids else ""))
    return missing
