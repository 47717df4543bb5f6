"""The hardware token table in targets/<backend>/hardware.toml: text -> vendor, arch, product.

``[tokens]`` name hardware and may be found inside a longer text (a device name);
``[runtime]`` holds what a runtime reports besides a name (a compute capability
such as ``9.0``), matched whole only.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

from gitkb.errors import GitkbError
from gitkb.resources import data_dir

# Producers write LOCAL when they did not know the machine: it names no hardware.
_NO_HARDWARE = {"local", ""}


@dataclass(frozen=True)
class Hardware:
    vendor: str
    arch: str
    product: str | None
    token: str  # the table token that decided


@cache
def _tables() -> dict[str, dict[str, Hardware]]:
    tables: dict[str, dict[str, Hardware]] = {"tokens": {}, "runtime": {}}
    for path in sorted(data_dir("targets").glob("*/hardware.toml")):
        data = tomllib.loads(path.read_text())
        for section, tokens in tables.items():
            for token, entry in data.get(section, {}).items():
                tokens[token.lower()] = Hardware(
                    data["vendor"], entry["arch"], entry.get("product"), token
                )
    return tables


def table() -> dict[str, Hardware]:
    return _tables()["tokens"]


def lookup(text: str | None) -> Hardware | None:
    """Map a hardware string: exact token first, then the longest token contained in it."""
    if not isinstance(text, str) or text.strip().lower() in _NO_HARDWARE:
        return None
    wanted = text.strip().lower()
    tokens = table()
    if wanted in tokens:
        return tokens[wanted]
    contained = [t for t in tokens if t in wanted]
    return tokens[max(contained, key=len)] if contained else None


def require(text: str) -> Hardware:
    """Like lookup, but an unknown token is an error naming the known ones."""
    found = lookup(text)
    if found is None:
        known = ", ".join(sorted(table()))
        raise GitkbError(f"unknown hardware token {text!r}; known tokens: {known}", 2)
    return found


def arches() -> set[str]:
    return {hw.arch for hw in table().values()}


def vendor_of(arch: str) -> str | None:
    """The vendor whose tables name ``arch``; None for ``generic`` (no one's in particular)."""
    if arch == "generic":
        return None
    return next((hw.vendor for hw in table().values() if hw.arch == arch), None)


def runtime(text: str | None) -> Hardware | None:
    """What a runtime reports (an arch name, ``sm_90``, ``9.0``, ``gfx942``, ``H20``, a
    device name) -> the hardware: whole names first (arches, tokens, runtime values,
    ``sm_NN`` spelled ``smNN``), then a token inside a longer text; None when unknown."""
    if not isinstance(text, str) or not text.strip():
        return None
    wanted = text.strip().lower()
    if wanted in arches():
        return Hardware(vendor_of(wanted) or "generic", wanted, None, wanted)
    whole = {**_tables()["runtime"], **table()}
    for spelling in (wanted, wanted.replace("sm_", "sm"), wanted.replace("sm", "sm_", 1)):
        if spelling in whole:
            return whole[spelling]
    return lookup(wanted)
