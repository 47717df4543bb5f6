"""The gates' view of a store: the context they run on, and the index cache's own check
(``validate --full``)."""

from __future__ import annotations

from gitkb import layout
from gitkb.gates import Finding, GateContext
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.store import Store


def gate_context(store: Store, full: bool = False, commit: str | None = None) -> GateContext:
    """What the gates read of the store at ``commit`` (default: main): every record file
    from the tree, the view, and the cache check (``full``: the store-wide gates too)."""
    commit = commit or store.tip
    return GateContext(
        records=list(store.record_files(commit)),
        full=full,
        store=store.view(commit),
        index_check=lambda: cache_findings(store),
    )


def cache_findings(store: Store) -> list[Finding]:
    """How the index cache at main disagrees with a fresh rebuild from the records
    (``validate --full``); the cache is rebuilt when it does."""
    tip = store.tip
    fresh = IndexCache(None, store.opener)
    with fresh.snapshot(tip, keep=False):
        expected = {r.path: r for r in fresh.rows()}
    with store.cache.snapshot(tip):
        held = {r.path: r for r in store.cache.rows()}
    findings = []
    for path in sorted(expected.keys() | held.keys()):
        want, have = expected.get(path), held.get(path)
        name = layout.id_of(path)
        if have is None:
            findings.append(Finding(name, "index", f"the index cache lacks {path}"))
        elif want is None:
            findings.append(Finding(name, "index", f"the index cache names {path}, no record"))
        elif (have.blob, have.id, have.entry) != (want.blob, want.id, want.entry):
            findings.append(Finding(name, "index", f"the cache's entry for {path} is stale"))
    if findings:
        store.cache.rebuild_at(tip)
    return findings
