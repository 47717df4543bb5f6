"""A value's attributes as a JSON object, for the classes whose JSON keys are their fields
and properties, some under other names."""

from __future__ import annotations

from typing import Any


def attributes(value: object, names: str) -> dict[str, Any]:
    """``{key: value.<attribute>}`` in the order ``names`` lists them: space-separated,
    each an attribute (its name the key) or ``key=attribute``."""
    document = {}
    for name in names.split():
        key, _, attribute = name.partition("=")
        document[key] = getattr(value, attribute or key)
    return document
