"""A gitkb store: a git repository whose ``main`` commits are record admissions.

``layout`` names every path and ref; ``cache`` keeps the index entries under the
git directory; ``view`` is the store at one commit as gates see it; ``writer`` is
the one write path (``Change`` + ``Store.commit``); ``admission`` decides insert,
confirm, conflict and reproduction; ``store`` holds ``Store``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitkb.store.store import Store


def __getattr__(name: str) -> type[Store]:
    # ``from gitkb.store import Store`` without loading the VCS layer for modules that
    # only need the store's names (gitkb.store.layout).
    if name == "Store":
        from gitkb.store.store import Store

        return Store
    raise AttributeError(f"module 'gitkb.store' has no attribute {name!r}")
