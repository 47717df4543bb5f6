"""The technique vocabulary's version, read without parsing the vocabulary: the index
cache asks it on every open (a read verb's start-up), so this loads nothing but ``os``
and the shipped-data paths. The vocabulary itself is ``gitkb.trace.techniques``."""

from __future__ import annotations

import os

from gitkb.util.resources import data_path

FILE_NAME = "techniques.toml"
_KEY = b'version = "'


def vocabulary_path() -> str:
    return os.path.join(data_path("targets"), FILE_NAME)


def version() -> str:
    """The shipped vocabulary's ``version`` (its first key: a line ``version = "N"``), or
    ``missing`` / ``unversioned``."""
    try:
        with open(vocabulary_path(), "rb") as fh:
            raw = fh.read()
    except OSError:
        return "missing"
    for line in raw.splitlines():
        if line.startswith(_KEY) and line.rstrip().endswith(b'"'):
            return line.rstrip()[len(_KEY) : -1].decode("utf-8", "replace")
    return "unversioned"
