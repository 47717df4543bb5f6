"""The hardware token table in targets/<backend>/hardware.toml: text -> vendor, arch, product,
page (the measurement class warm start matches on).

``[tokens]`` name hardware and may be found inside a longer text (a device name);
``[runtime]`` holds what a runtime reports besides a name (a compute capability
such as ``9.0``), matched whole only.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
import zlib
from dataclasses import dataclass
from functools import cache

from gitkb.errors import GitkbError, echoed
from gitkb.util.resources import data_path

# Producers write LOCAL when they did not know the machine: it names no hardware.
_NO_HARDWARE = {"local", ""}
# An AMD compile target (gfx942, gfx90a, gfx1201) in any text, e.g. 'gfx942:sramecc+:xnack-'.
_GFX = re.compile(r"gfx[0-9]+[a-z]?", re.IGNORECASE)
# Where a gfx id the table does not know is filed: AMD, no family clean-1.3 can name.
UNKNOWN_GFX_ARCH = "generic"


@dataclass(slots=True, frozen=True)
class Hardware:
    vendor: str
    arch: str
    product: str | None
    token: str  # the table token that decided
    page: str | None = None  # the measurement class; None: the token names no product


# The tables below as JSON, beside the TOML they are compiled from (``python -m
# gitkb.targets`` writes it; a test holds it to the TOML): a read verb that asks for an
# architecture's vendor parses JSON, not TOML. Each source's CRC is kept with it, so a
# table edited since is read from its TOML, never from a stale copy.
COMPILED = "hardware.json"
_SECTIONS = ("tokens", "runtime")


@cache
def _tables() -> dict[str, dict[str, Hardware]]:
    sources = _sources()
    try:
        with open(os.path.join(data_path("targets"), COMPILED), "rb") as fh:
            compiled = json.loads(fh.read())
    except (OSError, ValueError):
        compiled = None
    if not isinstance(compiled, dict) or compiled.get("sources") != _checksums(sources):
        compiled = compile_tables(sources)
    return {
        section: {token: Hardware(*fields) for token, fields in compiled["tables"][section].items()}
        for section in _SECTIONS
    }


def _sources() -> dict[str, bytes]:
    """``<backend>/hardware.toml`` -> its bytes, for every backend folder."""
    root = data_path("targets")
    out = {}
    for backend in sorted(os.listdir(root)):
        try:
            with open(os.path.join(root, backend, "hardware.toml"), "rb") as fh:
                out[f"{backend}/hardware.toml"] = fh.read()
        except OSError:  # not a backend folder
            continue
    return out


def _checksums(sources: dict[str, bytes]) -> dict[str, int]:
    return {name: zlib.crc32(raw) for name, raw in sources.items()}


def compile_tables(sources: dict[str, bytes]) -> dict:
    """The token tables of ``sources`` (``_sources``) as ``COMPILED`` holds them: each
    token's ``Hardware`` fields, and each source's CRC."""
    tables: dict[str, dict[str, list]] = {section: {} for section in _SECTIONS}
    for raw in sources.values():
        data = tomllib.loads(raw.decode())
        for section, tokens in tables.items():
            for token, entry in data.get(section, {}).items():
                product = entry.get("product")
                page = entry.get("page", product)
                tokens[token.lower()] = [
                    data["vendor"],
                    entry["arch"],
                    product,
                    token,
                    page or None,
                ]
    return {"sources": _checksums(sources), "tables": tables}


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


def gfx_of(text: object) -> str | None:
    """The first gfx id in ``text``, lowercased; None when there is none."""
    if not isinstance(text, str):
        return None
    found = _GFX.search(text)
    return found.group(0).lower() if found else None


def leading_gfx(text: str) -> str | None:
    """The gfx id ``text`` starts with, lowercased; None when it starts with none."""
    found = _GFX.match(text)
    return found.group(0).lower() if found else None


def identify(text: str | None) -> Hardware | None:
    """Like ``lookup``, but a gfx id the table does not know is kept as its own product and
    page (AMD, arch ``generic``) instead of being dropped; a gfx id in the text decides
    before any other token, as it names exactly what was compiled for."""
    gfx = gfx_of(text)
    if gfx is not None:
        known = table().get(gfx)
        return known or Hardware("amd", UNKNOWN_GFX_ARCH, gfx, gfx, gfx)
    return lookup(text)


def page_of(text: str | None) -> str | None:
    """The measurement class a hardware string names; None when it names none (a family,
    a backend, or nothing known)."""
    found = identify(text)
    return found.page if found is not None else None


def require(text: str) -> Hardware:
    """Like lookup, but an unknown token is an error naming the known ones."""
    found = lookup(text)
    if found is None:
        known = ", ".join(sorted(table()))
        raise GitkbError(f"unknown hardware token {echoed(text)}; known tokens: {known}", 2)
    return found


def arches() -> set[str]:
    return {hw.arch for hw in table().values()}


def vendors_of(arch: str) -> set[str]:
    """The vendors whose tokens name ``arch``."""
    return {hw.vendor for hw in table().values() if hw.arch == arch}


def vendor_of(arch: str) -> str | None:
    """The one vendor whose tables name ``arch``; None when none or several do (``generic``
    is no one's in particular)."""
    vendors = vendors_of(arch) if arch != "generic" else set()
    return next(iter(vendors)) if len(vendors) == 1 else None


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


def compiled_text(compiled: dict) -> str:
    """``COMPILED``'s text: one token a line, in the tables' order (which ``lookup``'s
    ties follow)."""
    lines = ["{", f' "sources": {json.dumps(compiled["sources"])},', ' "tables": {']
    for i, section in enumerate(_SECTIONS):
        entries = [
            f"   {json.dumps(t)}: {json.dumps(f)}" for t, f in compiled["tables"][section].items()
        ]
        end = "}" if i == len(_SECTIONS) - 1 else "},"
        lines += [f"  {json.dumps(section)}: {{", ",\n".join(entries), f"  {end}"]
    return "\n".join([*lines, " }", "}"]) + "\n"


if __name__ == "__main__":
    target = os.path.join(data_path("targets"), COMPILED)
    with open(target, "w", encoding="utf-8") as fh:
        fh.write(compiled_text(compile_tables(_sources())))
    print(f"wrote {target}", file=sys.stderr)
