"""What the hook entry points run: the same gate registry as validate and admission."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gitkb import record as rec
from gitkb.gates import GateContext, run_gates
from gitkb.gates.registry import record_level

if TYPE_CHECKING:
    from gitkb.vcs.repository import Repository


def pre_commit(files: list[str]) -> list[str]:
    """Gate the staged record files (the pre-commit framework leaves exactly the staged
    content on disk); return one line per problem, empty when all pass."""
    records = []
    for name in files:
        path = Path(name).as_posix()
        if not rec.is_record_path(path):
            continue
        try:
            raw = Path(name).read_bytes()
        except OSError as exc:
            return [f"{name}: {exc.strerror}"]
        records.append(rec.load(path, raw))
    if not records:
        return []
    results = run_gates(GateContext(records=records), record_level())
    return [f"{f.line()}" for r in results for f in r.findings]


def pre_receive(lines: list[str], repo: Repository | None = None) -> list[str]:
    """Check a push from the ``old new ref`` lines git gives a pre-receive hook; return
    ``<ref> <commit>: <record-id>: <rule>: <what>`` lines, empty when the push may land.

    ``repo`` defaults to the repository the environment names, quarantine included.
    """
    from gitkb.hooks import pre_receive as hook
    from gitkb.vcs.repository import Repository

    return hook.pre_receive(lines, repo or Repository.open())


def reference_transaction(
    state: str, lines: list[str], repo: Repository | None = None
) -> list[str]:
    """Check a ref transaction git is about to commit (``prepared``: the locks held);
    return problem lines, empty when it may."""
    from gitkb.hooks import pre_receive as hook
    from gitkb.vcs.repository import Repository

    return hook.reference_transaction(state, lines, repo or Repository.open())


def commit_msg(path: str) -> list[str]:
    """Check the message file of a commit being made: an admission subject
    (``kb <action> <id>``) must end in a trailer block saying the same action and id."""
    from gitkb.store.writer import message_problems

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [f"{path}: {exc.strerror}"]
    return [f"{rid}: commit-msg: {what}" for rid, what in message_problems(_as_committed(text))]


def _as_committed(text: str) -> str:
    """The message as git will store it: comment lines and a scissors cut removed."""
    kept = []
    for line in text.splitlines():
        if line.startswith("# ------------------------ >8 ------------------------"):
            break
        if not line.startswith("#"):
            kept.append(line)
    return "\n".join(kept).strip("\n") + "\n"
