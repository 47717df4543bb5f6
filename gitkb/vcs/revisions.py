"""A revision as the user names it (``main``, ``origin/main``, ``HEAD~2``, an abbreviated
id), to the commit it means: C git's own reading, since the user typed git's syntax; and
where two commits' histories meet (their merge bases)."""

from __future__ import annotations

import subprocess

from dulwich.graph import find_merge_base
from dulwich.repo import ParentsProvider

from gitkb.vcs.repository import Repository


def commit_of(repo: Repository, revision: str) -> str | None:
    """The full id of the commit ``revision`` names in ``repo``, or None when it names
    none (unknown, ambiguous, or not a commit)."""
    if not revision or "\0" in revision or "\n" in revision:
        return None
    done = subprocess.run(
        ["git", "--git-dir", str(repo.git_dir), "rev-parse", "--verify", "--quiet",
         "--end-of-options", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and len(sha) == 40 else None


def merge_bases(repo: Repository, one: str, other: str) -> list[str]:
    """The best common ancestors of two commits (``git merge-base --all``), sorted; none
    where their histories do not meet."""

    class _Graph:  # what dulwich's merge-base search reads of a repository
        object_store = repo.object_store

        def parents_provider(self) -> ParentsProvider:
            return ParentsProvider(self.object_store)

    found = find_merge_base(_Graph(), [one.encode(), other.encode()])
    return sorted(sha.decode() for sha in found)
