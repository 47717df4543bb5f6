"""The winner commit: only the baseline -> winner change, into the kernel's own repository.

Before the run, ``prepare`` snapshots the target (HEAD, its content there, its
index entry). After the run, ``commit_winner`` three-way-merges the
baseline -> winner change onto the HEAD version (what is committed) and onto the
staged version (what stays staged), re-verifies the merged file when it differs
from the winner (the target was dirty), commits it through the VCS layer (git:
``git commit`` in the user's repository, its hooks and signing included, through
a temporary index; Mercurial: only the target path), and checks that what was
committed is exactly what was intended. Every refusal leaves the repository as
it was.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitkb.errors import GitkbError, RefMoved
from gitkb.vcs.trailers import format_message

if TYPE_CHECKING:
    from gitkb.optimize.scoring import Score
    from gitkb.vcs.kernel_repo import KernelRepo, KernelSnapshot

ATTRIBUTION = "TLX agent authored"


class MergeConflict(GitkbError):
    """The winner's change overlaps edits the target already had."""


def merge3(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """Line-based three-way merge: ``base`` -> ``theirs`` applied onto ``ours``.

    Changes of the two sides that overlap or touch are a conflict unless both
    sides made the identical change; raises MergeConflict.
    """
    base_lines = base.splitlines(keepends=True)
    sides = (ours.splitlines(keepends=True), theirs.splitlines(keepends=True))
    hunks = []  # (base start, base end, side, replacement lines)
    for side, lines in enumerate(sides):
        matcher = difflib.SequenceMatcher(None, base_lines, lines, autojunk=False)
        for tag, b0, b1, s0, s1 in matcher.get_opcodes():
            if tag != "equal":
                hunks.append((b0, b1, side, lines[s0:s1]))
    hunks.sort(key=lambda h: (h[0], h[1], h[2]))
    groups: list[list] = []
    for hunk in hunks:
        if groups and hunk[0] <= max(h[1] for h in groups[-1]):
            groups[-1].append(hunk)
        else:
            groups.append([hunk])
    out: list[bytes] = []
    position = 0
    for group in groups:
        start = min(h[0] for h in group)
        end = max(h[1] for h in group)
        versions = []
        for side in (0, 1):
            mine = [h for h in group if h[2] == side]
            if not mine:
                continue
            text, cursor = [], start
            for b0, b1, _, lines in mine:
                text += base_lines[cursor:b0] + lines
                cursor = b1
            versions.append(text + base_lines[cursor:end])
        if len(versions) == 2 and versions[0] != versions[1]:
            raise MergeConflict(
                f"the winner's change overlaps existing edits of the target near line {start + 1}"
            )
        out += base_lines[position:start] + versions[0]
        position = end
    out += base_lines[position:]
    return b"".join(out)


def performance_table(baseline_cases: list[dict], winner_cases: list[dict]) -> str:
    winner = {c["case_id"]: c for c in winner_cases}
    rows = ["case | baseline us | winner us | speedup | baseline cv | winner cv | correct"]
    for base in baseline_cases:
        mine = winner.get(base["case_id"], {})

        def fmt(value: float | None, digits: int = 3) -> str:
            return "n/a" if value is None else f"{value:.{digits}f}"

        rows.append(
            f"{base['case_id']} | {fmt(base.get('median_us'))} | {fmt(mine.get('median_us'))} | "
            f"{fmt(mine.get('speedup'), 4)}x | {fmt(base.get('cv'))} | {fmt(mine.get('cv'))} | "
            f"{'yes' if (mine.get('verification') or {}).get('passed') else 'no'}"
        )
    return "\n".join(rows)


def build_message(
    subject: str,
    summary: str,
    baseline_cases: list[dict],
    winner_cases: list[dict],
    aggregate: float,
    trace_label: str,
    trace_commit: str,
) -> str:
    body = "\n\n".join(
        part
        for part in (
            summary.strip(),
            "Performance:\n" + performance_table(baseline_cases, winner_cases),
            f"Weighted aggregate speedup: {aggregate:.4f}x",
            ATTRIBUTION,
        )
        if part
    )
    trailers = [
        ("TLX-Agent", "authored"),
        ("KB-Speedup", f"{aggregate:.4f}"),
        ("KB-Trace", trace_label),
        ("KB-Trace-Commit", trace_commit),
    ]
    return format_message(subject, body, trailers)


@dataclass
class CommitPlan:
    """What the run must still find when it commits: taken before the run starts."""

    kernel: Path
    repo: KernelRepo
    snapshot: KernelSnapshot
    baseline: bytes  # the target's work-tree bytes the run optimized


def prepare(kernel: Path, vcs: str = "auto") -> CommitPlan:
    """Snapshot the kernel's repository; refuses an untracked or conflicted target."""
    from gitkb.vcs.kernel_repo import open_kernel_repo

    repo = open_kernel_repo(kernel, vcs)
    snapshot = repo.snapshot(kernel)
    return CommitPlan(kernel, repo, snapshot, kernel.read_bytes())


@dataclass
class CommitResult:
    """``auto_commit.json``: the TLX agent's fields, then gitkb's (the re-verification of a
    dirty target's merged file, and the full message)."""

    requested: bool
    success: bool
    vcs: str | None = None
    repo_root: str | None = None
    target_path: str | None = None
    target_relpath: str | None = None
    base_revision: str | None = None
    commit_revision: str | None = None
    subject: str | None = None
    attribution: str = ATTRIBUTION
    dirty_target_at_start: bool = False
    diagnostics: str = ""
    reverified: bool = False
    merged_differs_from_winner: bool = False
    message: str | None = None

    def as_json(self) -> dict:
        return dict(self.__dict__)

    def event_line(self) -> str:
        """The TLX agent's one ``commit status=committed|failed`` event for log scrapers."""
        parts = [
            "[tlx-agent] commit",
            f"status={'committed' if self.success else 'failed'}",
            f"vcs={self.vcs or 'unknown'}",
        ]
        for key, value in (
            ("id", self.commit_revision),
            ("repo", self.repo_root),
            ("file", self.target_relpath),
        ):
            if value:
                parts.append(f"{key}={value}")
        if self.subject:
            parts.append(f"subject={json.dumps(self.subject)}")
        parts.append(f"attribution={json.dumps(self.attribution)}")
        if self.diagnostics:
            parts.append(f"diagnostics={json.dumps(self.diagnostics)}")
        return " ".join(parts)


def refused(kernel: Path, subject: str, why: str) -> CommitResult:
    """The result of a commit refused before the run (no repository, untracked target ...)."""
    return CommitResult(
        requested=True, success=False, subject=subject, target_path=str(kernel.absolute()),
        diagnostics=why,
    )  # fmt: skip


def commit_winner(
    plan: CommitPlan,
    winner: bytes,
    message: str,
    reverify: Callable[[bytes], tuple[bool, str]],
) -> CommitResult:
    """Commit the winner's change; never raises for a refusal, the result says why."""
    snap = plan.snapshot
    result = CommitResult(
        requested=True,
        success=False,
        vcs=snap.vcs,
        repo_root=str(snap.root),
        target_path=str(plan.kernel.absolute()),
        target_relpath=snap.path,
        base_revision=snap.head,
        subject=message.split("\n", 1)[0],
        dirty_target_at_start=snap.head_content != plan.baseline,
        message=message,
    )
    try:
        _commit(plan, winner, message, reverify, result)
    except GitkbError as exc:
        result.diagnostics = exc.message
    return result


def _commit(
    plan: CommitPlan,
    winner: bytes,
    message: str,
    reverify: Callable[[bytes], tuple[bool, str]],
    result: CommitResult,
) -> None:
    repo, snap = plan.repo, plan.snapshot
    if repo.head() != snap.head:
        raise RefMoved(f"HEAD moved during the run: was {snap.head}, now {repo.head()}")
    if repo.work_bytes(snap.path) != plan.baseline:
        raise GitkbError(f"{snap.path} changed during the run; not committing over it")
    if repo.index_sha(snap.path) != snap.index_sha:
        raise GitkbError(f"the staged version of {snap.path} changed during the run")
    if snap.head_content is None:
        # Added but never committed: the whole file is new in this commit.
        head_version, merged = b"", winner
    else:
        head_version = snap.head_content
        merged = merge3(plan.baseline, head_version, winner)
    if merged == head_version:
        raise GitkbError(f"the winner makes no net change to {snap.path} at HEAD")
    staged = repo.index_bytes(snap)
    if staged is not None:
        try:  # the user's staged hunks stay staged, with the winner's change under them
            staged = merge3(plan.baseline, staged, winner)
        except MergeConflict:
            raise MergeConflict(
                f"the winner's change overlaps the staged edits of {snap.path}"
            ) from None
    if merged != winner:
        result.merged_differs_from_winner = True
        ok, why = reverify(merged)
        result.reverified = True
        if not ok:
            raise GitkbError(
                f"{snap.path} had uncommitted edits and the merged file fails re-validation: {why}"
            )
    sha = repo.commit_file(
        snap, committed=merged, staged=staged, work=winner, before=plan.baseline, message=message
    )
    result.commit_revision = sha
    problems = []
    if repo.parents(sha) != [snap.head]:
        problems.append(f"parent is {repo.parents(sha)}, expected {snap.head}")
    if repo.changed_paths(sha) != [snap.path]:
        problems.append(f"commit changes {repo.changed_paths(sha)}, expected only {snap.path}")
    if repo.read_at(sha, snap.path) != merged:
        problems.append("committed bytes differ from the merged winner")
    if repo.head() != sha:
        problems.append("HEAD does not name the new commit")
    if problems:
        raise GitkbError("the winner commit is not what was intended: " + "; ".join(problems))
    result.success = True


def winner_message(
    subject: str | None,
    experiment: dict,
    kernel_name: str,
    base: Score,
    final: Score,
    trace_label: str,
    trace_head: str,
) -> tuple[str, str]:
    """(subject, message) of a run's winner commit: the subject asked for, else the
    experiment's title, else a default; the performance table and the trace trailers."""
    if final.aggregate is None:  # revalidation passes only a score with passing cases
        raise GitkbError("the winner has no aggregate speedup to commit")
    subject = subject or experiment.get("commit_title") or f"Optimize {kernel_name} with TLX agent"
    summary = experiment.get("commit_summary") or experiment.get("change") or ""
    message = build_message(
        subject,
        summary,
        [c.as_json() for c in base.cases],
        [c.as_json() for c in final.cases],
        final.aggregate,
        trace_label,
        trace_head,
    )
    return subject, message
