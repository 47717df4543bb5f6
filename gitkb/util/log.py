"""The library's notes (a recovered lock, a rebuilt cache, a scope note) and the
optimizer's live lines: loggers under ``gitkb``, one line each on stderr.

``-v`` / ``-q`` (``set_verbosity``) say how much reaches stderr.
"""

from __future__ import annotations

import logging
import sys

# The optimizer's live lines: a channel of their own, printed as they are ("[gitkb] ...").
LIVE_LOGGER = "gitkb.optimize.live"
_TOP = "gitkb"


def logger(name: str) -> logging.Logger:
    """The logger ``name`` (under ``gitkb``), its notes reaching stderr."""
    top = logging.getLogger(_TOP)
    if not top.handlers:
        top.addHandler(_Stderr())
        top.setLevel(logging.INFO)
        top.propagate = False
    return logging.getLogger(name)


def set_verbosity(verbose: bool, quiet: bool) -> None:
    """``-q``: warnings only (no notes, no live lines); ``-v``: debug notes too."""
    logger(_TOP).setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


class _Stderr(logging.Handler):
    """One line per record on ``sys.stderr`` as it is when the record comes (a caller may
    have swapped it); the notes read ``gitkb: ...``, the live lines as they are."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            print(text if record.name == LIVE_LOGGER else f"gitkb: {text}", file=sys.stderr)
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging's own contract: report, never raise
            self.handleError(record)
