"""The technique vocabulary's identity for the index cache: every row's ``technique`` is
derived under the vocabulary, so the cache keys its layout on the shipped file's digest and
any change to the file rebuilds it. The cache asks on every open (a read verb's start-up),
so the file is hashed, not parsed; parsing it is ``gitkb.trace.techniques``."""

from __future__ import annotations

import hashlib
import os
from functools import cache

from gitkb.util.resources import data_path

FILE_NAME = "techniques.toml"


def vocabulary_path() -> str:
    return os.path.join(data_path("targets"), FILE_NAME)


@cache
def digest() -> str:
    """The first 16 hex digits of the shipped vocabulary's SHA-256, or ``missing`` (building
    the vocabulary says what is wrong then). Read once a process: the file ships with gitkb."""
    try:
        with open(vocabulary_path(), "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()[:16]
    except OSError:
        return "missing"
