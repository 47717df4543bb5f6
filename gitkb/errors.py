"""The errors gitkb raises on purpose; the CLI turns each into one line and an exit code."""

from __future__ import annotations

import os

# The most characters of a caller's value an error message quotes.
ECHO_MAX = 80


class GitkbError(Exception):
    """A failure the user can act on: the message says what is wrong and where."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        # Admissions that landed before a multi-record run stopped on this error.
        self.admitted: list = []


class NotARepository(GitkbError):
    """A path that is not a git repository."""


class NotAStore(GitkbError):
    """A git repository that holds no gitkb store."""


class RefMoved(GitkbError):
    """A compare-and-swap ref update found the ref somewhere else."""


class LockTimeout(GitkbError):
    """Another writer held the store's lock for too long."""


class RecordError(GitkbError):
    """A record that cannot be read or placed (bad JSON, bad id, bad path)."""


class AdmissionRefused(GitkbError):
    """An admission that the gates or the store's rules refuse; nothing of it is written.
    ``findings`` are the gate findings behind it, when gates refused."""

    def __init__(self, message: str, findings: list | None = None, record_id: str = "-") -> None:
        super().__init__(message)
        self.findings = findings or []
        self.record_id = record_id


def echoed(value: str) -> str:
    """A value the caller sent, as a message quotes it: its repr, and past ``ECHO_MAX``
    characters its first ``ECHO_MAX`` and its length, so a long or hostile argument is named,
    never sent back whole."""
    if len(value) <= ECHO_MAX:
        return repr(value)
    return f"{value[:ECHO_MAX]!r}... ({len(value):,} characters)"


def os_reason(exc: OSError) -> str:
    """``strerror: filename`` of an OSError, as a message shows it."""
    name = exc.filename
    where = f": {os.fsdecode(name)}" if name is not None else ""
    return f"{exc.strerror or exc}{where}"


class writing:
    """Turn a failure to write into ``where`` (a folder the user named) into one clear line.
    (A class, not contextlib's decorator: the read verbs import this module, not contextlib.)"""

    def __init__(self, where: object) -> None:
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, trace: object) -> None:
        if isinstance(exc, OSError):
            raise GitkbError(f"{self.where}: cannot write there ({os_reason(exc)})") from None
