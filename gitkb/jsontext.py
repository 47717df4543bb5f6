"""JSON text in and out for gitkb, through CPython's own C codec, without importing ``json``.

Importing ``json`` loads ``re`` and with it ``enum``: about 12 ms on a slow machine, a
quarter of what a query may add to the interpreter's start. The C scanner and encoder
``json`` itself runs on (``_json``) are reached here directly, and the indented form
(``json``'s is Python code in ``json.encoder``, which needs ``re``) is written here.
The text is ``json``'s byte for byte, errors included (``tests/test_jsontext.py``);
where the accelerator is missing (another Python), ``json`` does the work.
"""

from __future__ import annotations

try:
    import _json
except ImportError:  # pragma: no cover - CPython has it
    _json = None

TYPE_CHECKING = False  # typing's, without importing typing (mypy reads it alike)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_SPACE = " \t\n\r"
_INF = float("inf")
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


class Malformed(ValueError):
    """Text that is not one JSON document: ``msg`` says what, at ``pos`` (``lineno``,
    ``colno``), as ``json.JSONDecodeError`` says it."""

    def __init__(self, msg: str, doc: str, pos: int) -> None:
        self.msg, self.doc, self.pos = msg, doc, pos
        self.lineno = doc.count("\n", 0, pos) + 1
        self.colno = pos - doc.rfind("\n", 0, pos)
        super().__init__(f"{msg}: line {self.lineno} column {self.colno} (char {pos})")


def _constant(name: str) -> float:
    return {"-Infinity": -_INF, "Infinity": _INF, "NaN": float("nan")}[name]


class _Hooks:
    """What ``_json.make_scanner`` reads off a decoder."""

    __slots__ = ("strict", "object_hook", "object_pairs_hook", "parse_float", "parse_int",
                 "parse_constant")  # fmt: skip

    def __init__(self, object_pairs_hook, parse_float, parse_int, parse_constant) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.parse_float = parse_float or float
        self.parse_int = parse_int or int
        self.parse_constant = parse_constant or _constant


class Decoder:
    """``json.JSONDecoder(...).decode`` with the hooks given (None: json's defaults)."""

    def __init__(
        self,
        object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
        parse_float: Callable[[str], Any] | None = None,
        parse_int: Callable[[str], Any] | None = None,
        parse_constant: Callable[[str], Any] | None = None,
    ) -> None:
        hooks = _Hooks(object_pairs_hook, parse_float, parse_int, parse_constant)
        # typeshed asks for a JSONDecoder: the scanner reads only the attributes _Hooks has
        self._scan = _json.make_scanner(hooks) if _json is not None else None  # type: ignore[arg-type]
        self._hooks = hooks

    def decode(self, text: str) -> Any:
        if self._scan is None:  # pragma: no cover - CPython has the accelerator
            return _fallback_decoder(self._hooks).decode(text)
        end, at = len(text), 0
        while at < end and text[at] in _SPACE:
            at += 1
        try:
            value, at = self._scan(text, at)
        except SystemError:
            # The scanner raises json's JSONDecodeError, which it looks up among the loaded
            # modules only (CPython 3.11): on malformed text, load it and scan again.
            import sys

            if "json.decoder" in sys.modules:
                raise
            import json.decoder  # noqa: F401

            return self.decode(text)
        except StopIteration as stop:
            raise Malformed("Expecting value", text, stop.value) from None
        except ValueError as exc:
            if type(exc).__name__ != "JSONDecodeError":
                raise  # a hook's own error, or int() of a number too long
            raise Malformed(exc.msg, text, exc.pos) from None  # type: ignore[attr-defined]
        while at < end and text[at] in _SPACE:
            at += 1
        if at != end:
            raise Malformed("Extra data", text, at)
        return value


def _fallback_decoder(hooks: _Hooks):  # pragma: no cover - CPython has the accelerator
    import json

    return json.JSONDecoder(
        object_pairs_hook=hooks.object_pairs_hook,
        parse_float=hooks.parse_float,
        parse_int=hooks.parse_int,
        parse_constant=hooks.parse_constant,
    )


_PLAIN = Decoder()


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``: bytes as UTF-8 (``json`` reads UTF-16 and -32 too: it does)."""
    if isinstance(text, bytes | bytearray):
        if text.startswith(_BOMS) or b"\x00" in text[:4]:
            import json  # another encoding than UTF-8: json's detection

            return json.loads(text)
        text = text.decode("utf-8", "surrogatepass")
    elif text.startswith("\ufeff"):
        raise Malformed("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _PLAIN.decode(text)


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(
    value: object,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    indent: int | None = None,
    sort_keys: bool = False,
    check_circular: bool = True,
    allow_nan: bool = True,
) -> str:
    """``json.dumps(value, ...)`` with these options, the same text."""
    if _json is None:  # pragma: no cover - CPython has the accelerator
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators,
                          indent=indent, sort_keys=sort_keys, check_circular=check_circular,
                          allow_nan=allow_nan)  # fmt: skip
    item_separator, key_separator = separators or ((", " if indent is None else ","), ": ")
    string = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if indent is not None:
        return _Indented(string, " " * indent, item_separator, key_separator, sort_keys,
                         check_circular, allow_nan).text(value)  # fmt: skip
    if isinstance(value, str):
        return string(value)
    encode = _json.make_encoder(
        {} if check_circular else None, _not_serializable, string, None, key_separator,
        item_separator, sort_keys, False, allow_nan,
    )  # fmt: skip
    return "".join(encode(value, 0))


class _Indented:
    """``json.dumps`` with an indent: the same text, written into one list."""

    def __init__(self, string, indent, item_separator, key_separator, sort_keys,
                 check_circular, allow_nan) -> None:  # fmt: skip
        self.string, self.indent = string, indent
        self.item_separator, self.key_separator = item_separator, key_separator
        self.sort_keys, self.allow_nan = sort_keys, allow_nan
        self.markers: set[int] | None = set() if check_circular else None
        self.out: list[str] = []

    def text(self, value: object) -> str:
        self._value(value, 0)
        return "".join(self.out)

    def _float(self, value: float) -> str:
        if value != value:
            text = "NaN"
        elif value == _INF:
            text = "Infinity"
        elif value == -_INF:
            text = "-Infinity"
        else:
            return float.__repr__(value)
        if not self.allow_nan:
            raise ValueError("Out of range float values are not JSON compliant: " + repr(value))
        return text

    def _scalar(self, value: object) -> str | None:
        """A value's text, or None for a list, a tuple or a dict."""
        if isinstance(value, str):
            return self.string(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            return self._float(value)
        return None

    def _enter(self, value: object) -> None:
        if self.markers is not None:
            if id(value) in self.markers:
                raise ValueError("Circular reference detected")
            self.markers.add(id(value))

    def _leave(self, value: object) -> None:
        if self.markers is not None:
            self.markers.discard(id(value))

    def _value(self, value: object, level: int) -> None:
        text = self._scalar(value)
        if text is not None:
            self.out.append(text)
        elif isinstance(value, list | tuple):
            self._list(value, level)
        elif isinstance(value, dict):
            self._dict(value, level)
        else:
            self._enter(value)
            self._value(_not_serializable(value), level)

    def _list(self, items: list | tuple, level: int) -> None:
        out = self.out
        if not items:
            out.append("[]")
            return
        self._enter(items)
        inner = "\n" + self.indent * (level + 1)
        out.append("[" + inner)
        separator = self.item_separator + inner
        for n, item in enumerate(items):
            if n:
                out.append(separator)
            self._value(item, level + 1)
        out.append("\n" + self.indent * level + "]")
        self._leave(items)

    def _dict(self, mapping: dict, level: int) -> None:
        out = self.out
        if not mapping:
            out.append("{}")
            return
        self._enter(mapping)
        inner = "\n" + self.indent * (level + 1)
        out.append("{" + inner)
        separator = self.item_separator + inner
        items = sorted(mapping.items()) if self.sort_keys else mapping.items()
        for n, (key, item) in enumerate(items):
            if isinstance(key, str):
                name = self.string(key)
            else:
                name = self._key(key)
            if n:
                out.append(separator)
            out.append(name + self.key_separator)
            self._value(item, level + 1)
        out.append("\n" + self.indent * level + "}")
        self._leave(mapping)

    def _key(self, key: object) -> str:
        if isinstance(key, float):
            return self.string(self._float(key))
        if key is True or key is False or key is None:
            return self.string(self._scalar(key) or "")
        if isinstance(key, int):
            return self.string(int.__repr__(key))
        raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
