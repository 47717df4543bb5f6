"""Turn gitkb's own errors into one message on stderr and an exit code; never a traceback."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

from gitkb.errors import GitkbError

EXIT_INTERNAL = 70


# The optimizer's live lines: a channel of their own, printed as they are ("[gitkb] ...").
LIVE_LOGGER = "gitkb.optimize.live"


class _Stderr(logging.Handler):
    """One line per record on ``sys.stderr`` as it is when the record comes (a caller may
    have swapped it); the library's notes read ``gitkb: ...``, the live lines as they are."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            print(text if record.name == LIVE_LOGGER else f"gitkb: {text}", file=sys.stderr)
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging's own contract: report, never raise
            self.handleError(record)


def _show_notes() -> None:
    """The library's notes (the loggers under ``gitkb``: a recovered lock, an upgrade) and
    the optimizer's live lines reach the user on stderr."""
    logger = logging.getLogger("gitkb")
    if not logger.handlers:
        logger.addHandler(_Stderr())
        logger.setLevel(logging.INFO)
        logger.propagate = False


def set_verbosity(verbose: bool, quiet: bool) -> None:
    """``-q``: warnings only (no notes, no live lines); ``-v``: debug notes too."""
    level = logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO
    logging.getLogger("gitkb").setLevel(level)


@contextlib.contextmanager
def error_handler() -> Iterator[None]:
    _show_notes()
    try:
        yield
    except GitkbError as exc:
        print(f"gitkb: error: {exc.message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("gitkb: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (e.g. `git kb list | head`): not an error of ours.
        sys.stderr.close()
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("GITKB_DEBUG"):
            raise
        print(
            f"gitkb: internal error: {type(exc).__name__}: {exc} "
            "(a bug in gitkb; rerun with GITKB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        sys.exit(EXIT_INTERNAL)
