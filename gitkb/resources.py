"""Where gitkb's shipped data (schemas, templates, targets, hook shims) lives.

An installed wheel carries the top-level data folders under ``gitkb/_data``;
a source checkout has them beside the package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """Return the folder of one kind of shipped data: schema, templates, targets or hooks."""
    installed = _PACKAGE / "_data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / kind
