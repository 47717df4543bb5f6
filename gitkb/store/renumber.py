"""``git kb renumber ID``: give this clone's admission of ID a fresh id.

Two clones that admit the same id at different paths meet on the server, whose hook
refuses the second push and names both commits. The way out is here: the commits
this clone has not pushed yet (``main`` beyond the upstream branch) are rewritten
so that the record they admit under ID is filed under a fresh id (the next number
of its ``-<letter><digits>`` suffix), with their subjects and ``KB-Record``
trailers following. The upstream's commits are untouched, so the next push is a
fast-forward again.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.store.writer import rewrite
from gitkb.vcs import treediff

if TYPE_CHECKING:
    from gitkb.store.store import Store

DEFAULT_UPSTREAM = "refs/remotes/origin/main"
_SUFFIX = re.compile(r"^(.*-[a-z])(\d+)$")


def fresh_id(record_id: str, taken: set[str]) -> str:
    """The next free id: ``...-s03`` -> ``...-s04``; without such a suffix, ``...-2``."""
    found = _SUFFIX.match(record_id)
    stem, number, width = (
        (found.group(1), int(found.group(2)), len(found.group(2))) if found else
        (record_id + "-", 1, 1)
    )  # fmt: skip
    while True:
        number += 1
        candidate = f"{stem}{number:0{width}d}"
        if candidate not in taken:
            return candidate


def renumber(store: Store, record_id: str, upstream: str | None = None) -> dict:
    """Rewrite this clone's unpushed commits so their admission of ``record_id`` takes a
    fresh id; a report of what moved."""
    repo = store.repo
    ref = upstream or DEFAULT_UPSTREAM
    base = repo.resolve(ref)
    if base is None:
        raise GitkbError(
            f"{ref} does not exist: fetch the server's main first (git fetch), or name the "
            "upstream with --upstream REF"
        )
    local = store.tip
    unpushed = [c for c in repo.walk(local, exclude=(base,))]
    if not unpushed:
        raise GitkbError(f"main has no commits beyond {ref}: nothing of this clone to renumber")
    admitted = sorted(
        {
            change.path
            for commit in unpushed
            if len(commit.parents) < 2
            for change in treediff.changes(
                repo, commit.parents[0] if commit.parents else None, commit.sha, rec.RECORDS_DIR
            )
            if change.kind == "add" and change.path.endswith(f"/{record_id}.json")
        }
    )
    if not admitted:
        raise GitkbError(f"no commit beyond {ref} admits {record_id}: nothing to renumber")
    taken = set(store.view(local).ids()) | set(store.view(base).ids())
    new_id = fresh_id(record_id, taken)
    moves = {path: path.rsplit("/", 1)[0] + f"/{new_id}.json" for path in admitted}

    def build(tip: str) -> tuple[str, set[str]]:
        if tip != local:
            raise GitkbError("main moved while renumbering; run git kb renumber again")
        mapped: dict[str, str] = {}
        for commit in reversed(unpushed):  # walk() gives newest first
            edits: dict[str, bytes | None] = {}
            for old, new in moves.items():
                raw = repo.read(commit.sha, old)
                if raw is not None:
                    edits[old] = None
                    edits[new] = _with_id(raw, new_id)
            parents = [mapped.get(p, p) for p in commit.parents]
            message = _renamed(commit.message, record_id, new_id) if edits else commit.message
            mapped[commit.sha] = repo.rewrite_commit(commit.sha, parents, edits, message)
        return mapped[local], set(moves) | set(moves.values())

    old_tip, new_tip = rewrite(store, build)
    return {
        "record": record_id,
        "new_id": new_id,
        "moved": [{"from": old, "to": new} for old, new in moves.items()],
        "rewritten": len(unpushed),
        "upstream": ref,
        "old_tip": old_tip,
        "new_tip": new_tip,
    }


def _with_id(raw: bytes, new_id: str) -> bytes:
    data = json.loads(raw)
    data["id"] = new_id
    return rec.dumps(data)


def _renamed(message: str, old_id: str, new_id: str) -> str:
    """The subject ``kb <action> <old>`` and the ``KB-Record: <old>`` trailer, renamed."""
    lines = message.split("\n")
    words = lines[0].split()
    if len(words) == 3 and words[0] == "kb" and words[2] == old_id:
        lines[0] = f"kb {words[1]} {new_id}"
    return "\n".join(
        f"KB-Record: {new_id}" if line == f"KB-Record: {old_id}" else line for line in lines
    )
