"""A gitkb store: a git repository whose ``main`` commits are record admissions.

``gitkb.layout`` names every path and ref; ``cache`` keeps the index entries under the
git directory; ``view`` is the store at one commit as gates see it; ``writer`` is
the one write path (``Change`` + ``Store.commit``); ``admission`` decides insert,
confirm, conflict and reproduction; ``store`` holds ``Store``.
"""

from __future__ import annotations

from gitkb.store.store import Store

__all__ = ["Store"]
