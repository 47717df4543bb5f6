"""Strict JSON: the one parser for every document and log line a store holds.

Python's ``json`` accepts what other readers choke on or read differently: lone
surrogate escapes (``"\\udc80"``: no UTF-8 encoder can write them back), ``NaN`` and
``Infinity``, duplicate keys (the last one silently wins), integers no double can
hold (``10**400`` overflows every float conversion downstream). A store refuses all
of them at the door, and its readers skip what slipped in before, so one bad object
can never take a reader down.
"""

from __future__ import annotations

import json
from collections import Counter

# A record larger than this is refused ([store] max_record_bytes overrides it).
MAX_RECORD_BYTES = 1 << 20
# One ledger or feedback line.
MAX_LINE_BYTES = 64 << 10
# The largest magnitude a double holds; an integer beyond it has no float value.
_MAX_DOUBLE = 1.7976931348623157e308


class StrictError(ValueError):
    """Why bytes are not a strict JSON document (one short phrase)."""


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    found = dict(pairs)
    if len(found) != len(pairs):
        twice = next(k for k, count in Counter(k for k, _ in pairs).items() if count > 1)
        raise StrictError(f"duplicate key {twice!r}")
    return found


def _constant(name: str) -> float:
    raise StrictError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise StrictError(f"number {text[:40]} does not fit a double")
    return value


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    value = int(text)
    if digits > 308 and abs(value) > _MAX_DOUBLE:
        raise StrictError(f"number {text[:40]}... does not fit a double")
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int
)


def loads(raw: bytes, max_bytes: int | None = None) -> object:
    """The value of one strict JSON document, or StrictError saying what is wrong."""
    if max_bytes is not None and len(raw) > max_bytes:
        raise StrictError(f"{len(raw)} bytes, over the limit of {max_bytes}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StrictError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise StrictError(f"malformed JSON: {exc.msg} (line {exc.lineno})") from None
    except RecursionError:
        raise StrictError("malformed JSON: nested too deeply") from None
    except StrictError:
        raise
    except ValueError as exc:  # int() of a number with thousands of digits
        raise StrictError(f"number out of range ({exc})") from None
    if b"\\u" not in raw:
        return value  # no escape at all: no surrogate (UTF-8 itself cannot hold one)
    try:
        # A lone surrogate is the one thing the decoder lets through that UTF-8 cannot
        # hold: encoding it back finds it (at C speed), wherever it sits.
        json.dumps(value, ensure_ascii=False, check_circular=False).encode("utf-8")
    except UnicodeEncodeError:
        raise StrictError("holds a lone surrogate escape (no UTF-8 text has one)") from None
    except RecursionError:
        raise StrictError("malformed JSON: nested too deeply") from None
    return value
