"""A store's ``gitkb.toml``, read once into a typed ``StoreConfig``: the one reader of it,
for the store's own verbs and for the server that judges a push.

Every key gitkb knows is declared here, with its type; a key it does not know is refused
(one line naming the key and the file), so a typo cannot switch a setting off quietly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gitkb.errors import GitkbError
from gitkb.layout import CONFIG_PATH
from gitkb.record.strict import MAX_RECORD_BYTES as DEFAULT_MAX_RECORD_BYTES


@dataclass(frozen=True)
class ServerBounds:
    """``[server]``: what one push may bring and cost before the server's hook refuses it.
    The defaults are generous (a whole store's first push fits); a server that takes
    pushes from people it does not know sets them lower."""

    # max_push_bytes: bytes of the objects the push brings, as the server holds them
    # (git's quarantine of the pushed pack or loose objects).
    push_bytes: int = 1 << 30
    # max_push_commits: commits the push brings onto main (or an allowed branch).
    push_commits: int = 20_000
    # max_push_records: record files the push's commits add or change, each commit's count.
    push_records: int = 20_000
    # hook_seconds: wall time the hook's checks may take.
    hook_seconds: float = 600.0


@dataclass(frozen=True)
class StoreConfig:
    name: str  # [store] name
    format: str  # [store] format: layout.FORMAT_1 or FORMAT_2
    schema: str  # [store] schema: the record format, clean-1.3
    # [store] max_record_bytes: the largest record file a push or an admission may add.
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    # [refs] allow: ref patterns a push may move besides main and the trace refs.
    allowed_refs: tuple[str, ...] = ()
    # [mine] non_target_kernels: kernel names whose captures are not the trace's target.
    non_target_kernels: tuple[str, ...] = ()
    bounds: ServerBounds = field(default_factory=ServerBounds)  # [server]


_TABLES = {
    "store": ("name", "format", "schema", "max_record_bytes"),
    "refs": ("allow",),
    "mine": ("non_target_kernels",),
    "access": ("require_signed", "curators", "admins"),  # gitkb.access.policy reads it
    "server": ("max_push_bytes", "max_push_commits", "max_push_records", "hook_seconds"),
}
# What the server falls back to where a store's config cannot be read (deny by default:
# no other refs; the default bounds).
UNREADABLE = StoreConfig(name="", format="", schema="")


class _Bad(Exception):
    """What is wrong with a parsed ``gitkb.toml``, before it is said where."""


def max_record_bytes(config: dict) -> int:
    """The ``[store] max_record_bytes`` of a parsed ``gitkb.toml`` (the default where it is
    missing or not a positive whole number: a push's checks say what is wrong with it)."""
    limit = (config.get("store") or {}).get("max_record_bytes", DEFAULT_MAX_RECORD_BYTES)
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return limit
    return DEFAULT_MAX_RECORD_BYTES


def parse(data: dict, where: str) -> StoreConfig:
    """The config of one parsed ``gitkb.toml`` (``where``: the store it belongs to)."""
    try:
        return _parse(data)
    except _Bad as bad:
        raise GitkbError(f"{where}: {CONFIG_PATH}: {bad}") from None


def problem(data: dict) -> str | None:
    """What is wrong with a parsed ``gitkb.toml``, in the words ``parse`` refuses it with;
    None when it parses."""
    try:
        _parse(data)
    except _Bad as bad:
        return str(bad)
    return None


def _parse(data: dict) -> StoreConfig:
    for table, body in data.items():
        if table not in _TABLES:
            raise _Bad(f"unknown table [{table}]")
        if not isinstance(body, dict):
            raise _Bad(f"{table} must be a table ([{table}])")
        for key in body:
            if key not in _TABLES[table]:
                raise _Bad(f"unknown key [{table}] {key}")
    store = data.get("store") or {}
    for key in ("name", "format", "schema"):
        if key not in store:
            raise _Bad(f"[store] {key} is missing")
        if not isinstance(store[key], str):
            raise _Bad(f"[store] {key} must be a string")
    return StoreConfig(
        name=store["name"],
        format=store["format"],
        schema=store["schema"],
        max_record_bytes=_whole(store, "store", "max_record_bytes", DEFAULT_MAX_RECORD_BYTES),
        allowed_refs=_names(data.get("refs") or {}, "refs", "allow", "a list of ref patterns"),
        non_target_kernels=_names(
            data.get("mine") or {}, "mine", "non_target_kernels", "a list of kernel names"
        ),
        bounds=_bounds(data.get("server") or {}),
    )


def _bounds(table: dict) -> ServerBounds:
    default = ServerBounds()
    seconds = table.get("hook_seconds", default.hook_seconds)
    number = isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
    if not number or not math.isfinite(seconds) or seconds <= 0:
        raise _Bad("[server] hook_seconds must be a positive number of seconds")
    return ServerBounds(
        push_bytes=_whole(table, "server", "max_push_bytes", default.push_bytes),
        push_commits=_whole(table, "server", "max_push_commits", default.push_commits),
        push_records=_whole(table, "server", "max_push_records", default.push_records),
        hook_seconds=float(seconds),
    )


def _whole(table: dict, table_name: str, key: str, default: int) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _Bad(f"[{table_name}] {key} must be a positive integer")
    return value


def _names(table: dict, table_name: str, key: str, what: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"[{table_name}] {key} must be {what}")
    return tuple(value)
