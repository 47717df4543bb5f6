"""A gitkb store: a git repository whose ``main`` commits are record admissions.

``gitkb.layout`` names every path and ref; ``cache`` keeps the index entries under the
git directory; ``view`` is the store at one commit as gates see it; ``writer`` is
the one write path (``Change`` + ``Store.commit``); ``admission`` decides insert,
confirm, conflict and reproduction; ``store`` holds ``Store``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (mypy reads it alike)
if TYPE_CHECKING:
    from gitkb.store.store import Store


def __getattr__(name: str) -> type[Store]:
    # Deferred for start-up: ``from gitkb.store import Store`` loads store.py when asked,
    # so a hook that needs one submodule (the commit-msg hook: writer's message rules)
    # starts without it.
    if name == "Store":
        from gitkb.store.store import Store

        return Store
    raise AttributeError(f"module 'gitkb.store' has no attribute {name!r}")
