"""The index cache moves when a snapshot is first asked something: a block that asks
nothing builds nothing (a check in a fresh clone whose gates read no other record), a
cache that holds a commit keeps up with the blocks kept over it, and a build from every
record is kept at the commit its block was opened at, whatever the block does next."""

from __future__ import annotations

import shutil

from gitkb import layout
from gitkb import record as rec
from gitkb.store import Store
from gitkb.store.cache.index_cache import IndexCache
from gitkb.testing import synthetic


def cold(store: Store) -> IndexCache:
    """A cache of ``store``'s repository with no file under the git directory (a fresh
    clone's)."""
    store.cache.close()
    shutil.rmtree(store.repo.git_dir / layout.CACHE_DIR, ignore_errors=True)
    return IndexCache.of(store.repo)


def test_a_snapshot_asked_nothing_builds_no_cache(store):
    store.admit(rec.dumps(synthetic.strategy(1)))
    cache = cold(store)
    with cache.snapshot(store.tip):
        pass
    with cache.snapshot(store.tip, keep=False):
        pass
    assert cache.held_commit() is None
    with cache.snapshot(store.tip) as held:
        assert held.commit == store.tip and held.count() == 1
    assert cache.held_commit() == store.tip


def test_a_build_is_kept_at_its_block_s_commit_and_later_moves_are_not(store):
    store.admit(rec.dumps(synthetic.strategy(1)))
    base = store.tip
    store.admit(rec.dumps(synthetic.strategy(2)))
    cache = cold(store)
    with cache.snapshot(base, keep=False), cache.snapshot(store.tip) as nested:
        assert nested.count() == 2  # built at base, moved to the tip by the diff
    assert cache.held_commit() == base
    with cache.snapshot(base) as held:
        assert held.count() == 1


def test_a_held_cache_follows_a_kept_block_asked_nothing(store):
    store.admit(rec.dumps(synthetic.strategy(1)))
    base = store.tip
    store.admit(rec.dumps(synthetic.strategy(2)))
    cache = cold(store)
    cache.warm(base)
    assert cache.held_commit() == base
    with cache.snapshot(store.tip):
        pass  # as a server's pre-receive brings its cache up to main
    assert cache.held_commit() == store.tip
    with cache.snapshot(base, keep=False):
        pass
    assert cache.held_commit() == store.tip
