"""The process table, as containment tests read it."""

from __future__ import annotations

import os
from pathlib import Path


def live_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds ``marker``: the process table
    as a containment test reads it."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found
