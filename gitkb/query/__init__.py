"""Retrieval for agents: ``git kb query``, ``git kb feedback`` and ``git kb mcp``.

The GPU-wiki retrieval contract over a store's ``main``, answered by the index
cache: ``scope`` resolves what the caller asked (runtime arch tokens through the
target tables, every other filter against the store's own vocabulary, failing
closed with the near misses); ``pool`` states which records are in scope and how
each was reached, for the cache to count in SQL (the few with feedback decided in
Python); ``rank`` orders them (text match blended with worth, capped), the cache
returning only the best;
``feedback`` keeps the append-only outcome log and folds it into the worth that
ranking reads; ``serve`` builds the projection an agent sees (never ``worth`` or
``evidence``); ``budget`` fits the answer into a byte budget; ``answer`` puts it
together (diagnosis, fallback, coverage); ``mcp_server`` serves the same verbs as
MCP tools.
"""
