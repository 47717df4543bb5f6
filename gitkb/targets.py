"""The hardware token table in targets/<backend>/hardware.toml: text -> vendor, arch, product."""

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
def table() -> dict[str, Hardware]:
    tokens: dict[str, Hardware] = {}
    for path in sorted(data_dir("targets").glob("*/hardware.toml")):
        data = tomllib.loads(path.read_text())
        for token, entry in data.get("tokens", {}).items():
            tokens[token.lower()] = Hardware(
                data["vendor"], entry["arch"], entry.get("product"), token
            )
    return tokens


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
