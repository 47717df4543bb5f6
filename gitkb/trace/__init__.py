"""Reading a trace (docs/trace-format.md): ingest, ladder, partition, packets, scrub.

This layer sits below both ``gitkb.gates`` and ``gitkb.mine``: mining distills records
from the packets built here, and the trace gates rebuild the same packets to judge them.
"""

from __future__ import annotations

from gitkb.errors import GitkbError


class TraceError(GitkbError):
    """The trace cannot be mined at all (not a repository, empty, no kernel.py, no hardware)."""
