"""Store gate `relations` (spec 4.5, ``--full`` only): every record a link names exists.

Every value under ``retrieval.links`` is read as a list (a single string is one
item); every truthy item must equal the id of a record in the store. The gate
needs every id, so it never runs on a single record at admission.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

from gitkb.gates import Finding, Gate, GateContext

NAME = "relations"


def link_items(value: object) -> list:
    """The items of one links value: a list as it is, anything else as a one-item list."""
    return value if isinstance(value, list) else [value]


def _links(record: dict) -> dict:
    retrieval = record.get("retrieval")
    links = retrieval.get("links") if isinstance(retrieval, dict) else None
    return links if isinstance(links, dict) else {}


def dangling_links(record_id: str, record: dict, known_ids: Container[str]) -> Iterator[Finding]:
    """Findings for the links of one record that name no id in ``known_ids`` (a set of ids,
    or an index: the pre-receive hook checks a push's records against the new tip's)."""
    for relation, value in _links(record).items():
        items = link_items(value)
        for position, target in enumerate(items):
            # Only truthy items are links; a non-string item can never name a record.
            if not target or (isinstance(target, str) and target in known_ids):
                continue
            field = f"retrieval.links.{relation}"
            if isinstance(value, list):
                field += f"[{position}]"
            yield Finding(
                record_id, NAME, f"{relation} names {target!r}, which is no record here", field
            )


def check(ctx: GateContext) -> Iterator[Finding]:
    known_ids = {data.get("id") for _, data in ctx.parsed() if isinstance(data.get("id"), str)}
    for record_file, record in ctx.parsed():
        yield from dangling_links(record_file.id, record, known_ids)


# --- injection cases ----------------------------------------------------------------------


def _set_links(ctx: GateContext, **links: object) -> bool:
    ctx.records[0].data["retrieval"]["links"] = links
    return True


GATE = Gate(
    NAME,
    "store",
    "every record named in retrieval.links exists",
    check,
    record_level=False,
    full_only=True,
)


@GATE.case("unknown-see-also")
def _unknown_see_also(ctx: GateContext) -> bool:
    return _set_links(ctx, see_also=["nvidia.h100.triton.norm.anti.split-row-reduction-t07"])


@GATE.case("unknown-parent-string")
def _unknown_parent_string(ctx: GateContext) -> bool:
    return _set_links(ctx, parent="nvidia.h100.triton.norm.looped-two-read-s03")


@GATE.case("deleted-target")
def _deleted_target(ctx: GateContext) -> bool:
    """Link the first record to another one, then drop that one from the store."""
    if len(ctx.records) < 2 or ctx.records[1].data is None:
        return False
    _set_links(ctx, depends_on=[ctx.records[1].data["id"]])
    del ctx.records[1]
    return True


@GATE.case("renamed-target")
def _renamed_target(ctx: GateContext) -> bool:
    """A supersedes link that still names a record's id from before a rename."""
    if len(ctx.records) < 2 or ctx.records[1].data is None:
        return False
    return _set_links(ctx, supersedes=[ctx.records[1].data["id"] + "-v0"])
