"""What tests share besides fixtures (those stay in conftest.py): paths, the real git and
gitkb in subprocesses, the process table, damaged repositories."""

from helpers.paths import (
    CONFORMANCE,
    DATA,
    EXAMPLES,
    ROOT,
    SHARED,
    example_files,
    needs_conformance,
)
from helpers.processes import live_with
from helpers.repos import forge_cache_row, lose_object
from helpers.run import git, kb, put_git_kb_on_path, unmeasured_env, write_git_kb

__all__ = [
    "CONFORMANCE",
    "DATA",
    "EXAMPLES",
    "ROOT",
    "SHARED",
    "example_files",
    "forge_cache_row",
    "git",
    "kb",
    "live_with",
    "lose_object",
    "needs_conformance",
    "put_git_kb_on_path",
    "unmeasured_env",
    "write_git_kb",
]
