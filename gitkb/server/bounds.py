"""What one push may bring and cost (``[server]`` in ``gitkb.toml``, as main held it before
the push): bytes of objects, commits, record files, and the hook's wall time. A push over
any of them is refused in one line, and checking stops there, so the bound also bounds
the work a hostile push can make the server do."""

from __future__ import annotations

import time

from gitkb.store.config import ServerBounds

PARTS = "push it in parts"


class OverBound(Exception):
    """A push went over one of the server's bounds (the message says which)."""


class Budget:
    """What a push has used of the server's bounds so far; each use past a bound raises
    ``OverBound``."""

    def __init__(self, bounds: ServerBounds) -> None:
        self.bounds = bounds
        self.started = time.monotonic()
        self.commits = 0
        self.records = 0

    def brings_bytes(self, size: int) -> None:
        limit = self.bounds.push_bytes
        if size > limit:
            raise OverBound(
                f"the push brings {size:,} bytes of objects, over the store's "
                f"[server] max_push_bytes of {limit:,}; {PARTS}"
            )

    def brings_commit(self) -> None:
        self.commits += 1
        limit = self.bounds.push_commits
        if self.commits > limit:
            raise OverBound(
                f"the push brings more than {limit:,} commits (the store's "
                f"[server] max_push_commits); {PARTS}"
            )

    def writes_records(self, count: int) -> None:
        self.records += count
        limit = self.bounds.push_records
        if self.records > limit:
            raise OverBound(
                f"the push's commits write more than {limit:,} record files (the store's "
                f"[server] max_push_records); {PARTS}"
            )

    def remaining(self) -> float:
        """The seconds the checks may still take: what a step that runs a program (the
        signature check) gives it as its timeout."""
        return max(0.0, self.bounds.hook_seconds - (time.monotonic() - self.started))

    def tick(self) -> None:
        """Between two steps of the checks: refuse once they have run past the bound."""
        if self.remaining() <= 0:
            raise self.out_of_time()

    def out_of_time(self) -> OverBound:
        """The refusal of a push whose checks ran past the bound (a step that ran out of
        its time raises it)."""
        return OverBound(
            f"checking the push took over {self.bounds.hook_seconds:g} s (the store's "
            f"[server] hook_seconds); {PARTS}"
        )
