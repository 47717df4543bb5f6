"""Reading values out of records and other JSON documents, one rule per function.

A record is parsed JSON and may hold anything where a field is expected: every reader
here takes any object and returns the value when it is of the kind asked for, else a
neutral one (None, "" or an empty container). The rules differ on purpose and the
names say which: ``json_number`` keeps what JSON parsing gave (a float that is inf or
nan stays one), ``finite_number`` does not, ``number_or_numeric_string`` also reads
``"1.45"`` (as GEAK writes speedups). Booleans are never numbers.
"""

from __future__ import annotations

import math


def dig(node: object, *keys: str) -> object:
    """``node[k1][k2]...``, or None where a key is missing or a level is not an object."""
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def mapping(value: object) -> dict:
    """``value`` when it is a JSON object, else {}."""
    return value if isinstance(value, dict) else {}


def array(value: object) -> list:
    """``value`` when it is a JSON array, else []."""
    return value if isinstance(value, list) else []


def json_number(value: object) -> float | None:
    """A JSON number as a float, inf and nan included; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def finite_number(value: object) -> float | None:
    """A finite JSON number as a float; None for anything else (inf and nan too)."""
    found = json_number(value)
    return found if found is not None and math.isfinite(found) else None


def number_or_numeric_string(value: object) -> float | None:
    """A finite number, also from a numeric string (``" 1.45"``); else None."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    return finite_number(value)


def stripped_text(value: object) -> str:
    """A string without its surrounding whitespace; "" for anything else."""
    return value.strip() if isinstance(value, str) else ""


def string_or_none(value: object) -> str | None:
    """A string as it is; None for anything else."""
    return value if isinstance(value, str) else None
