"""gitkb's JSON Schemas: loading them and validating against them.

clean-1.3 is a hand-written file in the top-level ``schema/`` folder; the opt-trace-1.0
profile is generated from it (``gitkb.schema.profile``). ``errors`` answers with a
compiled yes/no check first (``gitkb.schema.check``) and asks jsonschema for the
messages only when the answer is no. jsonschema is imported inside the functions that
need it, so importing this package stays cheap for commands that never validate.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from gitkb.errors import GitkbError
from gitkb.schema.check import compile_or_none
from gitkb.util.resources import data_dir

BASE = "clean-1.3"
PROFILE = "opt-trace-1.0"


class SchemaError(GitkbError):
    """A schema file that is missing or malformed, or a profile patch that would widen."""


def schema_path(name: str) -> Path:
    """Where the schema called ``name`` lives (``schema/<name>.schema.json``)."""
    return data_dir("schema") / f"{name}.schema.json"


@cache
def load(name: str) -> dict:
    """The parsed schema ``name``. Cached: callers must not mutate the result."""
    path = schema_path(name)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SchemaError(f"schema file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"schema file is not valid JSON: {path}: {exc}") from None


def forget() -> None:
    """Drop the loaded and compiled schemas (after a schema file was rewritten)."""
    load.cache_clear()
    _validator.cache_clear()
    _fast_check.cache_clear()


@cache
def _validator(name: str) -> Any:
    # The shipped schemas are checked against the draft 2020-12 meta-schema by the test
    # suite; checking them again here would add ~0.1 s to every hook and validate run.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load(name))


@cache
def _fast_check(name: str) -> Any:
    return compile_or_none(load(name))


def _format_path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def errors(document: dict, name: str = BASE, limit: int | None = None) -> list[tuple[str, str]]:
    """Every way ``document`` breaks schema ``name``, as (JSON path, message) pairs.

    Sorted by path then message so output never depends on the validator's walk order;
    ``limit`` keeps the first ``limit`` of that sorted list. A compiled yes/no check
    answers first; jsonschema walks only the documents that fail it, for the messages.
    """
    fast = _fast_check(name)
    if fast is not None and fast(document):
        return []
    found = sorted(
        (_format_path(error.absolute_path), error.message)
        for error in _validator(name).iter_errors(document)
    )
    return found if limit is None else found[:limit]
