"""Turn gitkb's own errors into one message on stderr and an exit code; never a traceback."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from gitkb.errors import GitkbError

EXIT_INTERNAL = 70


@contextlib.contextmanager
def error_handler() -> Iterator[None]:
    """One line on stderr and an exit code for whatever the block raises."""
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
    except Exception as exc:
        # The last line of defence against tracebacks.
        if os.environ.get("GITKB_DEBUG"):
            raise
        print(
            f"gitkb: internal error: {type(exc).__name__}: {exc} "
            "(a bug in gitkb; rerun with GITKB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        sys.exit(EXIT_INTERNAL)
