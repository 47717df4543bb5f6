"""dulwich beside the object layer: what it raises reading a damaged object, its delta
code (in C), and its commits as ``CommitInfo``. ``Repository`` asks dulwich where the
object layer leaves a case to it, and turns what dulwich raises into ``Unreadable``."""

from __future__ import annotations

import struct
import zlib

from dulwich.errors import (
    ApplyDeltaError,
    ChecksumMismatch,
    FileFormatException,
    WrongObjectException,
)
from dulwich.objects import Commit
from dulwich.pack import PackFileDisappeared
from dulwich.pack import apply_delta as dulwich_apply_delta

from gitkb.vcs.objects import Unreadable
from gitkb.vcs.objects.commit import CommitInfo

# What dulwich raises reading a damaged object, pack or index (OverflowError: an index
# entry's offset past any file).
DULWICH_UNREADABLE = (KeyError, ValueError, OSError, IndexError, TypeError, AssertionError,
                      OverflowError, zlib.error, struct.error, ChecksumMismatch, ApplyDeltaError,
                      FileFormatException, WrongObjectException, PackFileDisappeared)  # fmt: skip


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format, applied by dulwich's C code (a trace read applies thousands)."""
    try:
        return b"".join(dulwich_apply_delta(base, delta))
    except (ApplyDeltaError, ValueError, IndexError, TypeError, AssertionError) as exc:
        raise Unreadable(f"a delta cannot be applied ({exc})") from None


def commit_info(sha: str, obj: Commit) -> CommitInfo:
    return CommitInfo(
        sha=sha,
        parents=tuple(p.decode() for p in obj.parents),
        author=obj.author.decode("utf-8", "replace"),
        committer=obj.committer.decode("utf-8", "replace"),
        author_time=obj.author_time,
        commit_time=obj.commit_time,
        message=obj.message.decode("utf-8", "replace"),
        tree=obj.tree.decode(),
    )
