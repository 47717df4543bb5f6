"""Generated stores for the benches: ``size`` synthetic records in one import commit.

Written through the store's one write path (a single ``import`` change; the gates
are not the subject of these benches, so they do not run), then the index cache is
built once, as a store in use has it.
"""

from __future__ import annotations

from pathlib import Path

from gitkb import record as rec
from gitkb.samples import synthetic
from gitkb.store import Store
from gitkb.store.writer import Change


def build_store(path: Path, size: int) -> Store:
    store = Store.init(path, bare=True)
    edits: dict[str, bytes | None] = {}
    for n in range(size):
        record = synthetic.strategy(n)
        edits[rec.path_for(record)] = rec.dumps(record)

    def build(view) -> Change:
        return Change(
            "import",
            f"synthetic-{size}",
            edits,
            body=f"{size} generated records.",
            trailers=[("KB-Source", "synthetic"), ("KB-Records", str(size))],
        )

    store.commit([build])
    assert len(store.view()) == size
    return store


def fresh_records(size: int, count: int) -> list[bytes]:
    """``count`` records the store of ``size`` does not hold, as admission payloads."""
    return [rec.dumps(synthetic.strategy(size + 1_000_000 + n)) for n in range(count)]
