"""A fast yes/no check of a document against one of gitkb's own schemas.

jsonschema walks a schema anew for every document (about 0.65 ms per clean-1.3
record); the store gates validate thousands. This compiles the keywords gitkb's
schemas use into nested closures once, so a valid record costs a few function
calls per field. It only answers valid or not: ``gitkb.schema.errors`` asks
jsonschema for the messages when the answer is no, so a schema keyword this
module does not know refuses to compile rather than being skipped.

Semantics follow draft 2020-12 as jsonschema implements it: booleans are not
numbers, 3.0 is an integer, ``$ref`` applies beside sibling keywords, ``if``
without ``then`` constrains nothing, ``enum``/``const`` compare as JSON values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

Check = Callable[[object], bool]

# Keywords that annotate and never constrain.
_ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "examples", "x-profile-of"}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}
# The types an isinstance call decides alone (no bool-vs-int subtleties).
_PLAIN_CLASSES: dict[str, type] = {"string": str, "object": dict, "array": list, "null": type(None)}


def json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: 1 == 1.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


class UnsupportedSchema(Exception):
    """The schema uses a keyword this checker does not implement."""


def compile_schema(root: dict) -> Check:
    """Compile ``root`` (with its ``#/$defs/...`` references) into one check function."""
    defs = root.get("$defs", {})
    compiled_defs: dict[str, Check] = {}

    def ref(pointer: str) -> Check:
        if not pointer.startswith("#/$defs/"):
            raise UnsupportedSchema(f"$ref {pointer!r}")
        name = pointer.removeprefix("#/$defs/")
        if name not in compiled_defs:
            compiled_defs[name] = lambda v: compiled_defs[name](v)  # placeholder for recursion
            compiled_defs[name] = build(defs[name])
        return compiled_defs[name]

    def build(schema: object) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise UnsupportedSchema(f"schema {schema!r}")
        checks: list[Check] = []
        fused = fused_check(schema)
        if fused is not None:
            checks.append(fused[0])
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or (fused is not None and keyword in fused[1]):
                continue
            checks.append(keyword_check(keyword, value, schema))
        checks = [c for c in checks if c is not None]
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return _every(checks)

    def fused_check(schema: dict) -> tuple[Check, frozenset[str]] | None:
        """One function for the keywords that most often come together (an object's type,
        properties, required keys and additionalProperties; an array's type and items; a
        string enum and its type), and the keywords it covers: a record's every node
        then costs one call instead of one per keyword."""
        typed = schema.get("type")
        if typed in (None, "object") and _OBJECT_KEYWORDS.intersection(schema):
            if "patternProperties" in schema:
                raise UnsupportedSchema("patternProperties")
            properties = schema.get("properties", {})
            extra = schema.get("additionalProperties", True)
            classes = {k: c for k, sub in properties.items() if (c := plain_type(sub))}
            check = _object(
                typed == "object",
                tuple(schema.get("required", ())),
                {k: build(sub) for k, sub in properties.items() if k not in classes},
                classes,
                extra is False,
                None if isinstance(extra, bool) else build(extra),
            )
            covered = _OBJECT_KEYWORDS | ({"type"} if typed else set())
            return check, frozenset(covered)
        if typed == "array" and "items" in schema:
            return _items(build(schema["items"]), typed=True), frozenset({"type", "items"})
        enum = schema.get("enum")
        if typed == "string" and isinstance(enum, list) and all(isinstance(o, str) for o in enum):
            # A string enum admits strings only: the type adds nothing.
            return keyword_check("enum", enum, schema), frozenset({"type", "enum"})
        return None

    def plain_type(schema: object) -> tuple[type, ...] | None:
        """The classes of a schema that is only a ``type`` of plain classes (string,
        object, array, null): an isinstance call decides it."""
        if not isinstance(schema, dict) or set(schema) - _ANNOTATIONS != {"type"}:
            return None
        names = schema.get("type")
        names = names if isinstance(names, list) else [names]
        if not names or not all(isinstance(n, str) and n in _PLAIN_CLASSES for n in names):
            return None
        return tuple(_PLAIN_CLASSES[n] for n in names)

    # ``value``: the keyword's own value in the schema (a type name, a bound, a list ...).
    def keyword_check(keyword: str, value: Any, schema: dict) -> Check | None:
        if keyword == "type":
            names = value if isinstance(value, list) else [value]
            tests = [_TYPES[n] for n in names]
            if len(tests) == 1:
                return tests[0]
            if set(names) <= {"string", "object", "array", "null"}:
                # Plain classes, no bool-vs-int subtleties: one isinstance call.
                classes = tuple(_PLAIN_CLASSES[n] for n in names)
                return lambda v: isinstance(v, classes)
            plain = tuple(_PLAIN_CLASSES[n] for n in names if n in _PLAIN_CLASSES)
            return _any_type(plain, tuple(_TYPES[n] for n in names if n not in _PLAIN_CLASSES))
        if keyword == "enum":
            if all(isinstance(option, str) for option in value):
                strings = frozenset(value)  # a string equals a string only: no JSON subtleties
                return lambda v: isinstance(v, str) and v in strings
            return lambda v: any(json_equal(v, option) for option in value)
        if keyword == "const":
            if isinstance(value, str):
                return lambda v: isinstance(v, str) and v == value
            return lambda v: json_equal(v, value)
        if keyword == "$ref":
            return ref(value)
        if keyword == "required":
            return _required(tuple(value))
        if keyword == "properties":
            return _properties(tuple((k, build(s)) for k, s in value.items()))
        if keyword == "additionalProperties":
            known = frozenset(schema.get("properties", {}))
            if "patternProperties" in schema:
                raise UnsupportedSchema("patternProperties")
            return _additional(known, None if value is False else build(value))
        if keyword == "items":
            return _items(build(value))
        if keyword == "minLength":
            return lambda v: not isinstance(v, str) or len(v) >= value
        if keyword == "maxLength":
            return lambda v: not isinstance(v, str) or len(v) <= value
        if keyword == "minItems":
            return lambda v: not isinstance(v, list) or len(v) >= value
        if keyword == "maxItems":
            return lambda v: not isinstance(v, list) or len(v) <= value
        if keyword == "minimum":
            return lambda v: not _is_number(v) or v >= value
        if keyword == "maximum":
            return lambda v: not _is_number(v) or v <= value
        if keyword == "exclusiveMinimum":
            return lambda v: not _is_number(v) or v > value
        if keyword == "exclusiveMaximum":
            return lambda v: not _is_number(v) or v < value
        if keyword == "pattern":
            search = re.compile(value).search
            return lambda v: not isinstance(v, str) or search(v) is not None
        if keyword == "allOf":
            return _every([build(s) for s in value])
        if keyword == "if":
            condition = build(value)
            then = build(schema["then"]) if "then" in schema else None
            otherwise = build(schema["else"]) if "else" in schema else None
            return lambda v: (
                (then is None or then(v)) if condition(v) else (otherwise is None or otherwise(v))
            )
        if keyword in ("then", "else"):
            return None  # applied by "if"
        raise UnsupportedSchema(f"keyword {keyword!r}")

    return build(root)


# Combinators written as loops: a generator per call costs more than the checks it runs.


def _any_type(plain: tuple[type, ...], tests: tuple[Check, ...]) -> Check:
    """A ``type`` list: an isinstance call for the plain classes, then each other test."""

    def check(v: object) -> bool:
        if isinstance(v, plain):
            return True
        return any(test(v) for test in tests)

    return check


def _every(checks: Iterable[Check]) -> Check:
    checks = tuple(checks)

    def check(v: object) -> bool:
        return all(part(v) for part in checks)

    return check


def _required(keys: tuple[str, ...]) -> Check:
    def check(v: object) -> bool:
        if isinstance(v, dict):
            for key in keys:
                if key not in v:
                    return False
        return True

    return check


def _properties(props: tuple[tuple[str, Check], ...]) -> Check:
    by_key = dict(props)

    def check(v: object) -> bool:
        if not isinstance(v, dict):
            return True
        # The document's keys, not the schema's: records leave most properties out.
        for key, value in v.items():
            part = by_key.get(key)
            if part is not None and not part(value):
                return False
        return True

    return check


_OBJECT_KEYWORDS = frozenset({"properties", "required", "additionalProperties"})


def _object(
    typed: bool,
    required: tuple[str, ...],
    props: dict[str, Check],
    classes: dict[str, tuple[type, ...]],
    closed: bool,
    extra: Check | None,
) -> Check:
    """``type: object`` (when ``typed``), ``required``, ``properties`` (a check per key,
    or the classes of a key whose schema is a plain type) and ``additionalProperties``
    (false: ``closed``; a schema: ``extra``) in one pass over the document's keys."""

    def check(v: object) -> bool:
        if not isinstance(v, dict):
            return not typed
        for key in required:
            if key not in v:
                return False
        for key, value in v.items():
            part = props.get(key)
            if part is None:
                kinds = classes.get(key)
                if kinds is not None:
                    if not isinstance(value, kinds):
                        return False
                elif closed or (extra is not None and not extra(value)):
                    return False
            elif not part(value):
                return False
        return True

    return check


def _additional(known: frozenset, extra: Check | None) -> Check:
    """``additionalProperties``; ``extra`` None: false (no other key allowed)."""

    def check(v: object) -> bool:
        if not isinstance(v, dict):
            return True
        return all(key in known or (extra is not None and extra(v[key])) for key in v)

    return check


def _items(item: Check, typed: bool = False) -> Check:
    """``items`` (and ``type: array`` when ``typed``)."""

    def check(v: object) -> bool:
        if not isinstance(v, list):
            return not typed
        return all(item(x) for x in v)

    return check


def compile_or_none(root: dict) -> Check | None:
    """The compiled check, or None when the schema uses a keyword not implemented here
    (the caller then asks jsonschema every time: slower, never wrong)."""
    try:
        return compile_schema(root)
    except UnsupportedSchema:
        return None
