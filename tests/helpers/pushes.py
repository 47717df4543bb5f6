"""Pushes into a hooked server and commits made with no gate in the way, as the server
tests craft them; ``refused`` checks a refusal the way every such test reads one."""

from __future__ import annotations

import json
from pathlib import Path

from gitkb import record as rec
from gitkb.layout import BRANCH
from gitkb.store import Store
from gitkb.vcs.trailers import format_message
from helpers.paths import example_files
from helpers.run import git, kb, put_git_kb_on_path


def push(store: Store, *refspecs: str, url: str = "origin"):
    return git(
        "push", "--porcelain", url, *(refspecs or ("main",)), cwd=store.location, check=False
    )


def admit_examples(store: Store) -> None:
    """Admit every example record of templates/examples into ``store``."""
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))


def has_object(repo: Path, sha: str) -> bool:
    return git("cat-file", "-e", sha, cwd=repo, check=False).returncode == 0


def forge(store: Store, edits: dict, subject: str, trailers: list, body: str = "") -> str:
    """Commit ``edits`` onto main with no gate in the way (as a hand-made commit would be)."""
    tip = store.tip
    commit = store.repo.write_commit(tip, edits, format_message(subject, body, trailers))
    store.repo.update_ref(BRANCH, tip, commit)
    return commit


def record_edits(records: dict[str, dict]) -> dict:
    """Edits writing ``records`` (path -> record)."""
    return {path: rec.dumps(record) for path, record in records.items()}


def refused(done, server: Path, commit: str, gate: str) -> str:
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "pre-receive hook declined" in output, output
    assert f"gitkb: refs/heads/main {commit}: " in output and f": {gate}: " in output, output
    assert not has_object(server, commit), "a refused push leaves no objects on the server"
    return output


def hooked_server_and_clone(tmp_path: Path, monkeypatch) -> tuple[Path, Store]:
    """A bare store with the server hook installed (`git-kb` on the PATH its hook sees),
    and a clone of it to push from."""
    put_git_kb_on_path(tmp_path, monkeypatch)
    server = tmp_path / "server.git"
    Store.init(server, bare=True)
    assert kb("hooks", "install", "--server", str(server)).returncode == 0
    git("clone", "-q", f"file://{server}", str(tmp_path / "work"))
    return server, Store.open(tmp_path / "work")


def forge_edit(store: Store, admitted: dict) -> str:
    """An ``insert`` over the already admitted record ``admitted``, its gain raised (the
    gates see nothing wrong; the history rules refuse any edit of an admitted record)."""
    record = json.loads(rec.dumps(admitted))
    record["worth"]["gain"]["pct"] = record["worth"]["gain"]["metrics"][0]["delta_pct"] = 99.0
    trailers = [("KB-Action", "insert"), ("KB-Record", record["id"])]
    return forge(store, record_edits({rec.path_for(record): record}),
                 f"kb insert {record['id']}", trailers)  # fmt: skip


def gitkb_lines(done) -> list[str]:
    """The ``gitkb:`` lines a push's client saw (relayed by git as ``remote: gitkb: ...``)."""
    return [line for line in (done.stdout + done.stderr).splitlines() if "gitkb: " in line]


def forge_config(store: Store, extra: str) -> str:
    """A ``kb config`` commit appending ``extra`` (TOML tables) to the store's gitkb.toml."""
    held = store.repo.read(store.tip, "gitkb.toml") or b""
    trailers = [("KB-Action", "config"), ("KB-Record", "store")]
    return forge(store, {"gitkb.toml": held + b"\n" + extra.encode()}, "kb config store",
                 trailers)  # fmt: skip
