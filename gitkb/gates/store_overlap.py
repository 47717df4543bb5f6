"""Trace gate `store-overlap`: a mined record does not take an id the live store uses.

What "live store" means depends on the run:

* at admission (``ctx.admission`` is the action): an ``insert`` whose id is
  already in the store fails; ``confirm`` and ``conflict`` name an existing record
  on purpose and are not checked;
* on a push (``"push"``): the server hook checks every added record's id against
  the store before the commit itself, naming both commits, so this gate stays out;
* when validating (a store's own main, or ``--staging`` against a store): no
  *other* file of the store may hold this id. A store validating itself therefore
  passes, an edited record (a confirm bumps counters) is still the same record,
  and a second copy is reported.

Sharing an ``episode_key`` is not overlap (it makes a confirm, not an insert)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

from gitkb.gates import Finding, Gate, GateContext, Skip
from gitkb.gates.trace_evidence import first_mined, is_mined, mined_records

NAME = "store-overlap"


def check(ctx: GateContext) -> Iterator[Finding]:
    records = mined_records(ctx)
    if ctx.store is None:
        raise Skip("no store: a record's id can only overlap a store's")
    admission = ctx.admission
    if admission not in (None, "insert"):
        return
    for record_file, data in records:
        record_id = data.get("id")
        rows = ctx.store.rows_of(record_id) if isinstance(record_id, str) else []
        if not rows:
            continue
        if admission == "insert":
            yield Finding(
                record_file.id,
                NAME,
                f"the store already has {record_id} ({rows[0].path}): admit a confirm or "
                "conflict, not an insert",
                "id",
            )
            continue
        for row in rows:
            if row.path != record_file.path:
                yield Finding(
                    record_file.id, NAME, f"{row.path} already holds {record_id} in the store", "id"
                )
                break


def _smallest_live_id(ctx: GateContext) -> str | None:
    if ctx.store is None:
        return None
    ids = ctx.store.ids()
    return ids[0] if ids else None


GATE = Gate(NAME, "trace", "a mined record's id is not already used in the live store", check)


@GATE.case("known-id")
def _known_id(ctx: GateContext) -> bool:
    record_file, live_id = first_mined(ctx), _smallest_live_id(ctx)
    if record_file is None or live_id is None:
        return False
    ctx.admission = "insert"
    record_file.data["id"] = live_id
    return True


@GATE.case("second-copy")
def _second_copy(ctx: GateContext) -> bool:
    """Validating: a record elsewhere in the tree reuses a live record's id."""
    record_file, live_id = first_mined(ctx), _smallest_live_id(ctx)
    if record_file is None or live_id is None:
        return False
    ctx.admission = None
    record_file.data["id"] = live_id
    return True


@GATE.case("re-mined-insert")
def _re_mined_insert(ctx: GateContext) -> bool:
    """Mining a trace again and inserting what is already there instead of confirming it."""
    record_file = first_mined(ctx)
    if record_file is None or ctx.store is None:
        return False
    for record_id in ctx.store.ids():
        live = ctx.store.read_record(record_id)
        if live.data is not None and is_mined(live.data):
            ctx.admission = "insert"
            record_file.data = copy.deepcopy(live.data)
            return True
    return False
