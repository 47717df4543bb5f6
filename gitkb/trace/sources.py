"""Where the trace gates find a trace: the store's copy under ``refs/kb/traces/<label>``.

The packets of a stored trace are rebuilt from those objects with the options the mining
run recorded beside the records (``traces/<label>.json`` on main), once per (store, label,
tip) in this process.
"""

from __future__ import annotations

import json

from gitkb.errors import GitkbError
from gitkb.store import layout
from gitkb.trace.options import TraceOptions
from gitkb.trace.packets import Packet, build_packets

_STORE_CACHE: dict[tuple[str, str, str, str], list[Packet]] = {}


def packets_for_store(store, label: str) -> list[Packet]:
    """The packets of the trace copied into ``store`` (a store view) under
    ``refs/kb/traces/<label>``. Hardware comes from the trace, or from the flags mining
    recorded in the store (none: the trace's own tokens)."""
    ref = layout.trace_ref(label)
    tip = store.repo.resolve(ref)
    if tip is None:
        raise GitkbError(f"the store has no trace {label} ({ref})")
    options = stored_options(store, label)
    key = (str(store.repo.git_dir), label, tip, repr(options))
    if key not in _STORE_CACHE:
        _STORE_CACHE[key] = build_packets(store.repo, tip, label, options)
    return _STORE_CACHE[key]


def stored_options(store, label: str) -> TraceOptions:
    """The hardware/dsl overrides a mining run recorded for this trace in the store, if any
    (``traces/<label>.json`` on main), so a rebuild resolves hardware like the run did.
    ``store`` is a store view: a pushed commit's view reads the file beside its records."""
    raw = store.read_file(layout.TRACE_OPTIONS_PATH.format(label=label))
    if raw is None:
        return TraceOptions()
    try:
        return TraceOptions.from_stored(json.loads(raw))
    except ValueError:
        return TraceOptions()
