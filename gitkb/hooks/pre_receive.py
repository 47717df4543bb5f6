"""The server's hooks as git runs them: parse the ``old new ref`` lines git feeds
``pre-receive`` and ``reference-transaction``, and hand them to the store's rules
(``gitkb.server.receive``, ``gitkb.server.history``)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping

from gitkb.errors import GitkbError
from gitkb.server import access
from gitkb.server.receive import RefUpdate, announce, check_push, transaction_problems
from gitkb.vcs import receiving
from gitkb.vcs.repository import ZERO_SHA, Repository

_SHA = re.compile(r"[0-9a-f]{40}")
# The state of a reference transaction in which its ref locks are held.
PREPARED = "prepared"
# Where each host names who pushed: gitolite sets GL_USER for the key it let in; a web
# server that authenticated the request hands git http-backend (and so its hooks)
# REMOTE_USER. The host decides who may push at all; gitkb only names them.
HOST_IDENTITIES = ("GL_USER", "REMOTE_USER")


def parse_updates(lines: Iterable[str], strict: bool = True) -> list[RefUpdate]:
    """The ``old new ref`` lines git feeds a pre-receive hook; ``strict`` False skips
    lines that name no two commit ids (a reference transaction also moves symbolic refs)."""
    updates = []
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3 or not (_SHA.fullmatch(parts[0]) and _SHA.fullmatch(parts[1])):
            if not strict:
                continue
            if len(parts) != 3:
                raise GitkbError(f"pre-receive: expected 'old new ref', got {line.strip()!r}")
            raise GitkbError(f"pre-receive: expected two 40-hex commit ids, got {line.strip()!r}")
        old, new, ref = parts
        updates.append(
            RefUpdate(None if old == ZERO_SHA else old, None if new == ZERO_SHA else new, ref)
        )
    return updates


def pre_receive(lines: list[str], repo: Repository) -> list[str]:
    updates = parse_updates(lines)
    for update in updates:
        for sha in (update.old, update.new):
            if sha is not None and not repo.has_object(sha):
                raise GitkbError(
                    f"pre-receive: {update.ref}: commit {sha} is not in the repository"
                )
    anchor = access.anchor(repo, server=True)
    check = check_push(updates, repo, anchor=anchor, pushed_bytes=receiving.pushed_bytes())
    if not check.problems:
        announce(updates, repo, check.cited)
    else:
        via, pusher = pusher_of(os.environ)
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        receiving.log_refusal(repo, receiving.Refusal(at, pusher, via, tuple(check.problems)))
    return check.problems


def pusher_of(environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(variable, user): who the host says is pushing, or (None, None) where the
    transport names no one (file://, git daemon)."""
    for name in HOST_IDENTITIES:
        if environ.get(name):
            return name, environ[name]
    return None, None


def reference_transaction(state: str, lines: list[str], repo: Repository) -> list[str]:
    if state != PREPARED:
        return []
    return transaction_problems(parse_updates(lines, strict=False), repo)
