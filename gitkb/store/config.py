"""A store's ``gitkb.toml``, read once into a typed ``StoreConfig``.

Every key gitkb knows is declared here, with its type; a key it does not know is refused
(one line naming the key and the file), so a typo cannot switch a setting off quietly.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitkb.errors import GitkbError
from gitkb.layout import CONFIG_PATH
from gitkb.record.strict import MAX_RECORD_BYTES as DEFAULT_MAX_RECORD_BYTES


@dataclass(frozen=True)
class StoreConfig:
    name: str  # [store] name
    format: str  # [store] format: layout.FORMAT_1 or FORMAT_2
    schema: str  # [store] schema: the record format, clean-1.3
    # [store] max_record_bytes: the largest record file a push or an admission may add.
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    # [store] allowed_refs: ref patterns a push may move besides main and the trace refs.
    allowed_refs: tuple[str, ...] = ()
    # [mine] non_target_kernels: kernel names whose captures are not the trace's target.
    non_target_kernels: tuple[str, ...] = ()


_TABLES = {
    "store": ("name", "format", "schema", "max_record_bytes", "allowed_refs"),
    "mine": ("non_target_kernels",),
    "access": ("require_signed", "curators", "admins"),  # gitkb.access.policy reads it
}


def max_record_bytes(config: dict) -> int:
    """The ``[store] max_record_bytes`` of a parsed ``gitkb.toml`` (the default where it is
    missing or not a positive whole number: a push's checks say what is wrong with it)."""
    limit = (config.get("store") or {}).get("max_record_bytes", DEFAULT_MAX_RECORD_BYTES)
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return limit
    return DEFAULT_MAX_RECORD_BYTES


def parse(data: dict, where: str) -> StoreConfig:
    """The config of one parsed ``gitkb.toml`` (``where``: the store it belongs to)."""
    for table, body in data.items():
        if table not in _TABLES:
            raise _bad(where, f"unknown table [{table}]")
        if not isinstance(body, dict):
            raise _bad(where, f"{table} must be a table ([{table}])")
        for key in body:
            if key not in _TABLES[table]:
                raise _bad(where, f"unknown key [{table}] {key}")
    store, mine = data.get("store") or {}, data.get("mine") or {}
    for key in ("name", "format", "schema"):
        if key not in store:
            raise _bad(where, f"[store] {key} is missing")
        if not isinstance(store[key], str):
            raise _bad(where, f"[store] {key} must be a string")
    limit = store.get("max_record_bytes", DEFAULT_MAX_RECORD_BYTES)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        raise _bad(where, "[store] max_record_bytes must be a positive integer")
    return StoreConfig(
        name=store["name"],
        format=store["format"],
        schema=store["schema"],
        max_record_bytes=limit,
        allowed_refs=_names(store, "allowed_refs", where, "store", "a list of ref patterns"),
        non_target_kernels=_names(
            mine, "non_target_kernels", where, "mine", "a list of kernel names"
        ),
    )


def _names(table: dict, key: str, where: str, table_name: str, what: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(where, f"[{table_name}] {key} must be {what}")
    return tuple(value)


def _bad(where: str, what: str) -> GitkbError:
    return GitkbError(f"{where}: {CONFIG_PATH}: {what}")
