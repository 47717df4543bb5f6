"""What a merge brings, for the access rules: whether a merge adds nothing of its own, and
which commits of a push it brings onto its first parent.

A forge's merge button makes merge commits that cannot carry a contributor's SSH
signature (GitHub signs them with its own key, or not at all). Such a merge is no one's
act, and needs none, where its tree is exactly what merging its second parent's changes
since their merge base onto its first parent gives, path by path (``adds_nothing``):
then what it brings is what the commits it brings did, each signed by its own author.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gitkb.server import history
from gitkb.vcs import revisions, treediff
from gitkb.vcs.repository import CommitInfo, Repository

Entry = tuple[int, str] | None  # (mode, blob id) of a path, None where there is none


def adds_nothing(repo: Repository, merge: CommitInfo) -> bool:
    """Whether ``merge`` (two parents, one merge base) changes its first parent only as
    merging its second parent's changes since the base does. Each path the second parent
    changed and the first did not is the second parent's version; a path both changed
    the same way stays; a log both appended to (``ledger/``, ``feedback/``, merged by
    union) holds the base's lines and then exactly the lines either side added; no other
    path differs from the first parent. Anything else (a conflict resolved, a change of
    its own, a side's change left out) is the merge's own change."""
    if len(merge.parents) != 2:
        return False
    first, side = merge.parents
    bases = revisions.merge_bases(repo, first, side)
    if len(bases) != 1:
        return False  # no common history, or a criss-cross: no one merge result
    ours_tree, base = repo.tree_of(first), bases[0]
    expected: dict[str, Entry] = {}  # path -> the merge's entry where it differs from ours
    unions: dict[str, tuple[Entry, Entry, Entry]] = {}  # log path -> (base, ours, theirs)
    for change in treediff.changes(repo, base, side):
        was = (change.old_mode, change.old_sha) if change.old_sha else None
        theirs = (change.new_mode, change.new_sha) if change.new_sha else None
        found = repo.lookup(ours_tree, change.path)
        ours = (found[0], found[1].decode()) if found else None
        if ours == was:
            expected[change.path] = theirs
        elif ours != theirs and history.path_class(change.path) in history.LOGS:
            unions[change.path] = (was, ours, theirs)
        elif ours != theirs:
            return False  # both sides changed it: only a conflict's resolution decides
    made: dict[str, Entry] = {
        change.path: (change.new_mode, change.new_sha) if change.new_sha else None
        for change in treediff.changes(repo, first, merge.sha)
    }
    for path, sides in unions.items():
        ours = sides[1]
        if not _union_of(repo, made.pop(path, ours), *sides):
            return False
    return made == expected


def _union_of(repo: Repository, merged: Entry, base: Entry, ours: Entry, theirs: Entry) -> bool:
    """Whether a log's merged version is the base's lines, then the lines ours and theirs
    each appended, in any order, and none other (git's union merge)."""
    if merged is None or ours is None or theirs is None or len({merged[0], ours[0]}) != 1:
        return False
    start = repo.blob(base[1]) if base else b""
    tails = []
    for entry in (merged, ours, theirs):
        body = repo.blob(entry[1])
        if not body.startswith(start):
            return False
        tails.append(set(body[len(start) :].splitlines()))
    return tails[0] == tails[1] | tails[2]


def brought_in(merge: CommitInfo, push: Mapping[str, CommitInfo]) -> set[str]:
    """The commits of ``push`` (id -> commit: what one push brings) that ``merge`` brings
    onto its first parent: those its second parent reaches and its first does not. A
    commit the push does not bring was judged when it landed."""
    first, side = merge.parents[:2]
    return _reach(side, push) - _reach(first, push)


def _reach(tip: str, push: Mapping[str, CommitInfo]) -> set[str]:
    seen: set[str] = set()
    stack = [tip]
    while stack:
        sha = stack.pop()
        if sha in push and sha not in seen:
            seen.add(sha)
            stack.extend(push[sha].parents)
    return seen


def pushes_along(commits: Iterable[CommitInfo], tip: str) -> dict[str, str]:
    """A history replayed as the pushes that made it (``git kb validate --history``):
    each commit on ``tip``'s first-parent line brought the commits its own first parent
    does not reach. Maps each commit to the one on the line that brought it."""
    by_sha = {c.sha: c for c in commits}
    line: list[str] = []
    at: str | None = tip
    while at is not None and at in by_sha:
        line.append(at)
        at = next(iter(by_sha[at].parents), None)
    landed: dict[str, str] = {}
    for step in reversed(line):
        stack = [step]
        while stack:
            sha = stack.pop()
            if sha in by_sha and sha not in landed:
                landed[sha] = step
                stack.extend(by_sha[sha].parents)
    return landed
