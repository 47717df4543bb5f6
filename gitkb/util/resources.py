"""Where gitkb's shipped data (schemas, templates, targets, hook shims) lives.

An installed wheel carries the top-level data folders under ``gitkb/_data``;
a source checkout has them beside the package.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def data_path(kind: str) -> str:
    """The folder of one kind of shipped data (schema, templates, targets or hooks), as a
    path string: what a reader that loads no pathlib (the hardware tables) asks for."""
    installed = os.path.join(_PACKAGE, "_data", kind)
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(_PACKAGE), kind)


def data_dir(kind: str) -> Path:
    """Return the folder of one kind of shipped data: schema, templates, targets or hooks."""
    return Path(data_path(kind))
