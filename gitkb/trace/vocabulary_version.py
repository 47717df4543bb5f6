"""The technique vocabulary's version: the index cache asks it on every open (a read verb's
start-up), so it is read here without building the vocabulary, which is
``gitkb.trace.techniques``."""

from __future__ import annotations

import os
import tomllib
from functools import cache

from gitkb.util.resources import data_path

FILE_NAME = "techniques.toml"


def vocabulary_path() -> str:
    return os.path.join(data_path("targets"), FILE_NAME)


@cache
def version() -> str:
    """The shipped vocabulary's ``version``, or ``missing`` / ``unversioned`` (a file that
    is not TOML states none: building the vocabulary says what is wrong with it). Read once
    a process: the vocabulary ships with gitkb, as ``techniques.vocabulary()`` reads it."""
    try:
        with open(vocabulary_path(), "rb") as fh:
            document = tomllib.load(fh)
    except OSError:
        return "missing"
    except tomllib.TOMLDecodeError:
        return "unversioned"
    stated = document.get("version")
    return stated if isinstance(stated, str) and stated else "unversioned"
