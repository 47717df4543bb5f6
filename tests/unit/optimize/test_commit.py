"""The winner commit into the user's repository: git (checked with C git) and Mercurial."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import git

from gitkb.optimize.commit import MergeConflict, build_message, commit_winner, merge3, prepare

BASE = "".join(f"line {i}\n" for i in range(1, 21))
TUNED = BASE.replace("line 15\n", "line 15 tuned\n")
HEADER_EDIT = BASE.replace("line 2\n", "line 2 edited by the user\n")


def message() -> str:
    ok = {"passed": True}
    cases = [{"case_id": "a", "median_us": 10.0, "cv": 0.01, "speedup": 1.0, "verification": ok}]
    winner = [{"case_id": "a", "median_us": 5.0, "cv": 0.02, "speedup": 2.0, "verification": ok}]
    return build_message("Tune line 15", "Line 15 tuned.", cases, winner, 2.0, "trace-1", "a" * 40)


def always_ok(merged):
    return True, ""


def repo_with(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "src").mkdir()
    (repo / "src" / "kernel.py").write_text(BASE)
    (repo / "src" / "util.py").write_text("u = 1\n")
    (repo / "README").write_text("readme\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "start", cwd=repo)
    return repo


def other_work(repo: Path) -> dict:
    """Staged and unstaged edits of other files, as C git reports them."""
    git("write-tree", cwd=repo)  # a fully valid cached tree in the index, src/ included
    (repo / "README").write_text("readme staged\n")
    git("add", "README", cwd=repo)  # staged outside src/: src/ stays cached
    (repo / "README").write_text("readme staged and dirty\n")
    (repo / "src" / "util.py").write_bytes(b"u = 1\r\n# unstaged \xff bytes\n")
    (repo / "scratch.txt").write_text("untracked\n")
    return snapshot_other(repo)


def snapshot_other(repo: Path) -> dict:
    def raw(*args):
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout

    return {
        "cached": raw("diff", "--cached", "--", "README", "src/util.py"),
        "unstaged": raw("diff", "--", "src/util.py", "README"),
        "files": {p: (repo / p).read_bytes() for p in ("src/util.py", "README", "scratch.txt")},
    }


def test_merge3_agrees_with_git_merge_file(tmp_path):
    for ours in (BASE, HEADER_EDIT, BASE.replace("line 20\n", "line 20\nline 21\n")):
        merged = merge3(BASE.encode(), ours.encode(), TUNED.encode())
        for name, text in (("base", BASE), ("ours", ours), ("theirs", TUNED)):
            (tmp_path / name).write_text(text)
        done = git("merge-file", "-p", "ours", "base", "theirs", cwd=tmp_path)
        assert merged == done.stdout.encode()
    with pytest.raises(MergeConflict):
        merge3(BASE.encode(), BASE.replace("line 15\n", "user 15\n").encode(), TUNED.encode())
    with pytest.raises(MergeConflict):  # touching edits are a conflict too
        merge3(BASE.encode(), BASE.replace("line 14\n", "user 14\n").encode(), TUNED.encode())
    assert merge3(BASE.encode(), TUNED.encode(), TUNED.encode()) == TUNED.encode()


@pytest.mark.slow
def test_clean_target_only_the_winner_is_committed(tmp_path):
    repo = repo_with(tmp_path)
    before = other_work(repo)
    head = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    plan = prepare(repo / "src" / "kernel.py")
    result = commit_winner(plan, TUNED.encode(), message(), always_ok)
    assert result.success, result.diagnostics
    assert not result.reverified
    assert git("rev-parse", "HEAD~1", cwd=repo).stdout.strip() == head
    assert git("show", "--name-only", "--format=", "HEAD", cwd=repo).stdout.split() == [
        "src/kernel.py"
    ]
    assert git("show", "HEAD:src/kernel.py", cwd=repo).stdout == TUNED
    assert snapshot_other(repo) == before
    status = git("status", "--porcelain", cwd=repo).stdout.splitlines()
    assert " M src/kernel.py" not in status and "M  src/kernel.py" not in status
    body = git("log", "-1", "--format=%B", cwd=repo).stdout
    assert body.count("TLX agent authored") == 1
    paragraphs = body.strip().split("\n\n")
    assert paragraphs[-2] == "TLX agent authored"
    assert "Weighted aggregate speedup: 2.0000x" in body and "Performance:" in body
    parsed = git("interpret-trailers", "--parse", cwd=repo, input=body).stdout.splitlines()
    assert parsed == [
        "TLX-Agent: authored",
        "KB-Speedup: 2.0000",
        "KB-Trace: trace-1",
        f"KB-Trace-Commit: {'a' * 40}",
    ]
    git("fsck", "--strict", cwd=repo)
    # A later `git commit` of the user's staged work must not bring the old kernel back
    # (a stale cached tree in the index would).
    git("commit", "-qm", "user work", cwd=repo)
    assert git("show", "HEAD:src/kernel.py", cwd=repo).stdout == TUNED
    assert git("show", "HEAD:README", cwd=repo).stdout == "readme staged\n"


def test_dirty_target_gets_only_the_winner_change_and_is_reverified(tmp_path):
    repo = repo_with(tmp_path)
    (repo / "src" / "kernel.py").write_text(HEADER_EDIT)  # the user's uncommitted edit
    plan = prepare(repo / "src" / "kernel.py")
    winner = HEADER_EDIT.replace("line 15\n", "line 15 tuned\n")
    seen = []
    result = commit_winner(
        plan, winner.encode(), message(), lambda merged: (seen.append(merged) or True, "")
    )
    assert result.success and result.reverified and seen == [TUNED.encode()]
    assert git("show", "HEAD:src/kernel.py", cwd=repo).stdout == TUNED
    assert (repo / "src" / "kernel.py").read_text() == winner  # the user's edit stays
    diff = git("diff", "--", "src/kernel.py", cwd=repo).stdout
    assert "+line 2 edited by the user" in diff and "tuned" not in diff


def test_dirty_target_failing_reverification_is_refused(tmp_path):
    repo = repo_with(tmp_path)
    (repo / "src" / "kernel.py").write_text(HEADER_EDIT)
    head = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    plan = prepare(repo / "src" / "kernel.py")
    winner = HEADER_EDIT.replace("line 15\n", "line 15 tuned\n")
    result = commit_winner(plan, winner.encode(), message(), lambda m: (False, "case a failed"))
    assert not result.success and "fails re-validation: case a failed" in result.diagnostics
    assert git("rev-parse", "HEAD", cwd=repo).stdout.strip() == head
    assert (repo / "src" / "kernel.py").read_text() == HEADER_EDIT


def test_overlapping_edits_are_refused(tmp_path):
    repo = repo_with(tmp_path)
    user = BASE.replace("line 15\n", "line 15 by the user\n")
    (repo / "src" / "kernel.py").write_text(user)
    plan = prepare(repo / "src" / "kernel.py")
    # the winner rewrites the very line the user edited: not the HEAD version's line
    result = commit_winner(
        plan, user.replace("by the user", "tuned").encode(), message(), always_ok
    )
    assert not result.success and "overlaps" in result.diagnostics
    assert (repo / "src" / "kernel.py").read_text() == user


def test_target_changed_mid_run_is_refused(tmp_path):
    repo = repo_with(tmp_path)
    plan = prepare(repo / "src" / "kernel.py")
    (repo / "src" / "kernel.py").write_text(HEADER_EDIT)  # edited while the run went on
    result = commit_winner(plan, TUNED.encode(), message(), always_ok)
    assert not result.success and "changed during the run" in result.diagnostics
    assert (repo / "src" / "kernel.py").read_text() == HEADER_EDIT


def test_head_moved_mid_run_is_refused(tmp_path):
    repo = repo_with(tmp_path)
    plan = prepare(repo / "src" / "kernel.py")
    git("commit", "-q", "--allow-empty", "-m", "meanwhile", cwd=repo)
    result = commit_winner(plan, TUNED.encode(), message(), always_ok)
    assert not result.success and "HEAD moved" in result.diagnostics
    assert git("log", "-1", "--format=%s", cwd=repo).stdout.strip() == "meanwhile"


def test_no_net_change_and_untracked_or_conflicted_targets_are_refused(tmp_path):
    repo = repo_with(tmp_path)
    plan = prepare(repo / "src" / "kernel.py")
    result = commit_winner(plan, BASE.encode(), message(), always_ok)
    assert not result.success and "no net change" in result.diagnostics
    (repo / "loose.py").write_text("x = 1\n")
    with pytest.raises(Exception, match="not tracked by git"):
        prepare(repo / "loose.py")
    git("checkout", "-qb", "side", cwd=repo)
    (repo / "src" / "kernel.py").write_text(BASE.replace("line 5\n", "side 5\n"))
    git("commit", "-qam", "side", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    (repo / "src" / "kernel.py").write_text(BASE.replace("line 5\n", "main 5\n"))
    git("commit", "-qam", "main", cwd=repo)
    git("merge", "-q", "side", cwd=repo, check=False)
    with pytest.raises(Exception, match="unresolved merge conflicts"):
        prepare(repo / "src" / "kernel.py")


# --------------------------------------------------------------------------- Mercurial

needs_hg = pytest.mark.skipif(shutil.which("hg") is None, reason="Mercurial (hg) not installed")


def hg(repo: Path, *args: str, check: bool = True) -> str:
    env = dict(os.environ, HGPLAIN="1", HGUSER="Test <t@example.invalid>")
    done = subprocess.run(["hg", *args], cwd=repo, env=env, capture_output=True, text=True)
    if check and done.returncode:
        raise AssertionError(done.stderr)
    return done.stdout


def hg_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "hgrepo"
    repo.mkdir()
    hg(repo, "init")
    (repo / "kernel.py").write_text(BASE)
    (repo / "notes.txt").write_text("notes\n")
    hg(repo, "add", "kernel.py", "notes.txt")
    hg(repo, "commit", "-m", "start")
    return repo


@pytest.mark.slow
@needs_hg
def test_hg_only_the_target_is_committed_other_work_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HGUSER", "Test <t@example.invalid>")
    repo = hg_repo(tmp_path)
    (repo / "notes.txt").write_bytes(b"notes\nunsaved \xfe\n")
    (repo / "kernel.py").write_text(HEADER_EDIT)
    plan = prepare(repo / "kernel.py", "hg")
    winner = HEADER_EDIT.replace("line 15\n", "line 15 tuned\n")
    result = commit_winner(plan, winner.encode(), message(), always_ok)
    assert result.success, result.diagnostics
    assert result.reverified
    assert hg(repo, "status", "--change", ".", "-n").split() == ["kernel.py"]
    assert hg(repo, "cat", "-r", ".", "kernel.py") == TUNED
    assert (repo / "kernel.py").read_text() == winner
    assert (repo / "notes.txt").read_bytes() == b"notes\nunsaved \xfe\n"
    desc = hg(repo, "log", "-r", ".", "-T", "{desc}")
    assert desc.count("TLX agent authored") == 1 and desc.endswith(f"KB-Trace-Commit: {'a' * 40}")


@pytest.mark.slow
@needs_hg
def test_hg_refusals(tmp_path, monkeypatch):
    monkeypatch.setenv("HGUSER", "Test <t@example.invalid>")
    repo = hg_repo(tmp_path)
    plan = prepare(repo / "kernel.py", "hg")
    (repo / "other.txt").write_text("x\n")
    hg(repo, "add", "other.txt")
    hg(repo, "commit", "-m", "meanwhile")
    result = commit_winner(plan, TUNED.encode(), message(), always_ok)
    assert not result.success and "HEAD moved" in result.diagnostics
    plan = prepare(repo / "kernel.py", "hg")
    user = BASE.replace("line 15\n", "line 15 by the user\n")
    (repo / "kernel.py").write_text(user)
    result = commit_winner(plan, TUNED.encode(), message(), always_ok)
    assert not result.success and "changed during the run" in result.diagnostics
    plan = prepare(repo / "kernel.py", "hg")
    result = commit_winner(
        plan, user.replace("by the user", "tuned").encode(), message(), always_ok
    )
    assert not result.success and "overlaps" in result.diagnostics
    assert hg(repo, "log", "-r", ".", "-T", "{desc}") == "meanwhile"
    (repo / "loose.py").write_text("x\n")
    with pytest.raises(Exception, match="not tracked by Mercurial"):
        prepare(repo / "loose.py", "hg")


# --------------------------------------------------------------------------- the user's git rules


def hook(repo: Path, name: str, body: str) -> None:
    path = repo / ".git" / "hooks" / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def state(repo: Path) -> dict:
    """HEAD, index, work tree and reflog, as C git reports them."""

    def raw(*args):
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout

    return {
        "head": raw("rev-parse", "HEAD"),
        "cached": raw("diff", "--cached"),
        "unstaged": raw("diff"),
        "status": raw("status", "--porcelain", "--untracked-files=all"),
        "reflog": raw("reflog", "--format=%H %gs"),
        "kernel": (repo / "src" / "kernel.py").read_bytes(),
        "git_dir": sorted(p.name for p in (repo / ".git").iterdir()),
    }


@pytest.mark.slow
def test_hooks_run_and_the_reflog_is_written(tmp_path):
    repo = repo_with(tmp_path)
    seen = tmp_path / "pre-commit-saw"
    hook(repo, "pre-commit", f"git diff --cached --name-only > {seen}\n")
    hook(repo, "commit-msg", 'printf "\\nReviewed-by: the commit-msg hook\\n" >> "$1"\n')
    hook(repo, "post-commit", f"git rev-parse HEAD > {tmp_path / 'post-commit-saw'}\n")
    other_work(repo)
    result = commit_winner(
        prepare(repo / "src" / "kernel.py"), TUNED.encode(), message(), always_ok
    )
    assert result.success, result.diagnostics
    assert seen.read_text().split() == ["src/kernel.py"]  # the hook saw only the winner
    assert (tmp_path / "post-commit-saw").read_text().strip() == result.commit_revision
    body = git("log", "-1", "--format=%B", cwd=repo).stdout
    assert "Reviewed-by: the commit-msg hook" in body and "KB-Trace: trace-1" in body
    reflog = git("reflog", "-1", "--format=%gs", cwd=repo).stdout.strip()
    assert reflog == "commit: Tune line 15"
    branch_log = git("reflog", "-1", "--format=%gs", "main", cwd=repo).stdout.strip()
    assert branch_log == "commit: Tune line 15"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pre-commit", "commit-msg"])
def test_a_refusing_hook_refuses_the_commit_and_changes_nothing(tmp_path, name):
    repo = repo_with(tmp_path)
    other_work(repo)
    hook(repo, name, 'echo "house rule: no robot commits on Fridays" >&2\nexit 1\n')
    before = state(repo)
    result = commit_winner(
        prepare(repo / "src" / "kernel.py"), TUNED.encode(), message(), always_ok
    )
    assert not result.success
    assert "git commit refused the winner" in result.diagnostics
    assert "house rule: no robot commits on Fridays" in result.diagnostics
    assert state(repo) == before  # HEAD, index, work tree, reflog; no scratch files left


def gpg_stub(tmp_path: Path, status: int) -> Path:
    """A gpg stand-in (gpg.program): records its arguments; signs with a fake signature,
    or refuses with ``status``."""
    calls = tmp_path / "gpg-calls"
    stub = tmp_path / "fake-gpg"
    stub.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"open({str(calls)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "sys.stdin.buffer.read()\n"
        f"if {status}:\n"
        "    sys.stderr.write('gpg: signing failed: no secret key\\n')\n"
        f"    sys.exit({status})\n"
        "sys.stderr.write('\\n[GNUPG:] SIG_CREATED D 1 8 00 1700000000 0123456789ABCDEF\\n')\n"
        "sys.stdout.write('-----BEGIN PGP SIGNATURE-----\\n\\nZmFrZQ==\\n"
        "-----END PGP SIGNATURE-----\\n')\n"
    )
    stub.chmod(0o755)
    return stub


@pytest.mark.slow
def test_commit_signing_is_honoured(tmp_path):
    repo = repo_with(tmp_path)
    git("config", "commit.gpgsign", "true", cwd=repo)
    git("config", "gpg.program", str(gpg_stub(tmp_path, 0)), cwd=repo)
    result = commit_winner(
        prepare(repo / "src" / "kernel.py"), TUNED.encode(), message(), always_ok
    )
    assert result.success, result.diagnostics
    assert "-bsau" in (tmp_path / "gpg-calls").read_text()
    raw = git("cat-file", "commit", "HEAD", cwd=repo).stdout
    assert "gpgsig -----BEGIN PGP SIGNATURE-----" in raw


def test_a_signing_failure_refuses_the_commit(tmp_path):
    repo = repo_with(tmp_path)
    git("config", "commit.gpgsign", "true", cwd=repo)
    git("config", "gpg.program", str(gpg_stub(tmp_path, 2)), cwd=repo)
    before = state(repo)
    result = commit_winner(
        prepare(repo / "src" / "kernel.py"), TUNED.encode(), message(), always_ok
    )
    assert not result.success and "gpg failed to sign" in result.diagnostics
    assert (tmp_path / "gpg-calls").exists()
    assert state(repo) == before


@pytest.mark.slow
def test_staged_hunks_of_the_kernel_stay_staged(tmp_path):
    repo = repo_with(tmp_path)
    kernel = repo / "src" / "kernel.py"
    kernel.write_text(HEADER_EDIT)
    git("add", "src/kernel.py", cwd=repo)  # staged: line 2
    work = HEADER_EDIT.replace("line 20\n", "line 20 unstaged\n")
    kernel.write_text(work)  # unstaged: line 20
    winner = work.replace("line 15\n", "line 15 tuned\n")
    result = commit_winner(prepare(kernel), winner.encode(), message(), always_ok)
    assert result.success, result.diagnostics
    assert git("show", "HEAD:src/kernel.py", cwd=repo).stdout == TUNED  # only the winner's line
    assert git("show", ":src/kernel.py", cwd=repo).stdout == HEADER_EDIT.replace(
        "line 15\n", "line 15 tuned\n"
    )
    cached = git("diff", "--cached", "-U0", "--", "src/kernel.py", cwd=repo).stdout
    assert "+line 2 edited by the user" in cached and "tuned" not in cached
    assert "unstaged" not in cached
    unstaged = git("diff", "-U0", "--", "src/kernel.py", cwd=repo).stdout
    assert "+line 20 unstaged" in unstaged and "line 2 edited" not in unstaged
    assert kernel.read_text() == winner


def test_a_winner_overlapping_a_staged_hunk_is_refused(tmp_path):
    repo = repo_with(tmp_path)
    kernel = repo / "src" / "kernel.py"
    kernel.write_text(BASE.replace("line 15\n", "line 15 staged\n"))
    git("add", "src/kernel.py", cwd=repo)
    kernel.write_text(BASE)  # the work tree went back; the staged hunk stays
    before = state(repo)
    result = commit_winner(prepare(kernel), TUNED.encode(), message(), always_ok)
    assert not result.success and "overlaps the staged edits" in result.diagnostics
    assert state(repo) == before


@pytest.mark.slow
def test_the_pre_commit_framework_judges_the_winner(tmp_path):
    """A repository guarded by the pre-commit framework: it stashes the user's unstaged
    work, judges only the winner's change, and puts everything back."""
    repo = repo_with(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: no-todo\n    name: no TODO in kernels\n"
        "    language: pygrep\n    entry: TODO\n    files: \\.py$\n"
    )
    git("add", ".pre-commit-config.yaml", cwd=repo)
    git("commit", "-qm", "guard", cwd=repo)
    # pre-commit is one of gitkb's dependencies: run it as this interpreter's module (a
    # venv's scripts need not be on PATH); its installed hook names this interpreter too.
    subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"], cwd=repo, check=True, capture_output=True
    )
    other_work(repo)
    before = state(repo)
    todo = BASE.replace("line 15\n", "line 15 TODO\n")
    refused = commit_winner(
        prepare(repo / "src" / "kernel.py"), todo.encode(), message(), always_ok
    )
    assert not refused.success and "no TODO in kernels" in refused.diagnostics
    assert "src/kernel.py:15:line 15 TODO" in refused.diagnostics
    assert state(repo) == before
    done = commit_winner(prepare(repo / "src" / "kernel.py"), TUNED.encode(), message(), always_ok)
    assert done.success, done.diagnostics
    assert git("show", "HEAD:src/kernel.py", cwd=repo).stdout == TUNED
    after = state(repo)
    assert after["cached"] == before["cached"] and after["unstaged"] == before["unstaged"]
