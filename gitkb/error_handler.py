"""Turn gitkb's own errors into one message on stderr and an exit code; never a traceback."""

from __future__ import annotations

import os
import sys

from gitkb.errors import GitkbError

EXIT_INTERNAL = 70


class error_handler:
    """One line on stderr and an exit code for whatever the block raises. (A class, not
    contextlib's decorator: contextlib costs a read verb's start-up a millisecond.)"""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, trace: object) -> None:
        if exc is None or not isinstance(exc, Exception | KeyboardInterrupt):
            return  # SystemExit and the like go on as they are
        if isinstance(exc, GitkbError):
            print(f"gitkb: error: {exc.message}", file=sys.stderr)
            sys.exit(exc.exit_code)
        if isinstance(exc, KeyboardInterrupt):
            print("gitkb: interrupted", file=sys.stderr)
            sys.exit(130)
        if isinstance(exc, BrokenPipeError):
            # The reader went away (e.g. `git kb list | head`): not an error of ours.
            sys.stderr.close()
            sys.exit(0)
        # The last line of defence against tracebacks.
        if os.environ.get("GITKB_DEBUG"):
            return
        print(
            f"gitkb: internal error: {type(exc).__name__}: {exc} "
            "(a bug in gitkb; rerun with GITKB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        sys.exit(EXIT_INTERNAL)
