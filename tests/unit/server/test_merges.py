"""What a merge brings (``gitkb.server.merges``), on merges C git makes in a real
repository: one that adds nothing of its own, and each way of adding something."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git

from gitkb.server import merges
from gitkb.vcs.repository import Repository

LEDGER = "ledger/r.jsonl"


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo).stdout.strip()


@pytest.fixture
def diverged(tmp_path) -> Path:
    """main and branch ``side`` grown apart from one base: each adds a file and appends a
    line to the union-merged ledger."""
    repo = tmp_path / "repo"
    git("init", "-q", str(repo))
    commit(repo, {".gitattributes": "ledger/*.jsonl merge=union\n", LEDGER: "base\n",
                  "shared.txt": "one\n"}, "base")  # fmt: skip
    git("checkout", "-qb", "side", cwd=repo)
    commit(repo, {"side.txt": "s\n", LEDGER: "base\nfrom side\n"}, "side")
    git("checkout", "-q", "main", cwd=repo)
    commit(repo, {"main.txt": "m\n", LEDGER: "base\nfrom main\n"}, "main")
    return repo


def merged(repo: Path, *options: str) -> bool:
    """``git merge side`` with ``options`` (and, with --no-commit, whatever the test then
    changes, committed): whether the merge adds nothing of its own."""
    git("merge", "-q", "--no-edit", *options, "side", cwd=repo, check=False)
    if "--no-commit" in options or git("status", "--porcelain", cwd=repo).stdout:
        git("add", "-A", cwd=repo)
        git("commit", "-qm", "merge", cwd=repo)
    store = Repository.open(repo)
    return merges.adds_nothing(store, store.commit(store.resolve("refs/heads/main")))


def test_a_clean_merge_with_a_union_merged_log_adds_nothing(diverged):
    assert merged(diverged)
    assert (diverged / LEDGER).read_text() == "base\nfrom main\nfrom side\n"


def test_a_change_of_its_own_is_the_merge_s(diverged):
    git("merge", "-q", "--no-commit", "side", cwd=diverged)
    (diverged / "shared.txt").write_text("changed while merging\n")
    assert not merged(diverged, "--no-commit")


def test_a_log_line_of_its_own_is_the_merge_s(diverged):
    git("merge", "-q", "--no-commit", "side", cwd=diverged)
    with (diverged / LEDGER).open("a") as log:
        log.write("from the merge\n")
    assert not merged(diverged, "--no-commit")


def test_a_side_s_change_left_out_is_the_merge_s(diverged):
    assert not merged(diverged, "-s", "ours")


def test_a_conflict_resolved_is_the_merge_s(diverged):
    git("checkout", "-q", "side", cwd=diverged)
    commit(diverged, {"shared.txt": "side's\n"}, "side edits")
    git("checkout", "-q", "main", cwd=diverged)
    commit(diverged, {"shared.txt": "main's\n"}, "main edits")
    git("merge", "-q", "side", cwd=diverged, check=False)  # conflicts
    (diverged / "shared.txt").write_text("main's\nside's\n")
    assert not merged(diverged, "--no-commit")


def test_a_commit_that_is_no_two_parent_merge_adds_nothing_only_if_it_merges(diverged):
    store = Repository.open(diverged)
    assert not merges.adds_nothing(store, store.commit(store.resolve("refs/heads/main")))
    git("checkout", "-q", "--orphan", "other", cwd=diverged)
    commit(diverged, {"other.txt": "o\n"}, "unrelated")
    git("checkout", "-q", "main", cwd=diverged)
    git("merge", "-q", "--no-edit", "--allow-unrelated-histories", "other", cwd=diverged)
    store = Repository.open(diverged)
    assert not merges.adds_nothing(store, store.commit(store.resolve("refs/heads/main")))


def test_a_history_replayed_as_the_pushes_along_main(diverged):
    merged(diverged)
    store = Repository.open(diverged)
    tip = store.resolve("refs/heads/main")
    commits = list(store.walk(tip))
    landed = merges.pushes_along(commits, tip)
    subjects = {c.sha: c.subject for c in commits}
    by_step: dict[str, set[str]] = {}
    for sha, step in landed.items():
        by_step.setdefault(subjects[step], set()).add(subjects[sha])
    merging = "Merge branch 'side'"
    assert by_step == {"base": {"base"}, "main": {"main"}, merging: {merging, "side"}}
    merge = store.commit(tip)
    push = {c.sha: c for c in commits if landed[c.sha] == tip}
    assert {subjects[s] for s in merges.brought_in(merge, push)} == {"side"}
