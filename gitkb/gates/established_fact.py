"""Store gate `established-fact` (spec 4.9, 5; gitkb rule 6): an anti-strategy states a law.

A negative record may stay only as "under checkable condition C, doing X
necessarily gives bad result Y": a reached verdict, at least one condition,
and a mechanism of 40+ characters that is a cause, not bookkeeping. The
non-mechanism phrases are the union of the store's list S and wiki-gate's
list G (spec 5.3), so a record passes here only what both reference tools pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gitkb.gates import Finding, Gate, GateContext, first_of_type, setting

NAME = "established-fact"

NO_CONCLUSION_VERDICTS = ("unknown", "unstable")
CONDITION_KEYS = ("sm_arch", "shape_regime", "dtype", "toolchain")
MIN_MECHANISM_CHARS = 40

# Non-mechanism phrases, case-insensitive searches with no word boundary before the first word.
# Lists S (store) and G (wiki-gate) share items 1-5 and 7; 6, 8, 9, 10 are S only.
PHRASES_S_AND_G = (
    r"no improvement (?:found|over)",  # S1: exhaustion bookkeeping
    r"flat[ -]within[ -]noise",  # S2: a noise-band result, gaps a space or a hyphen
    r"within noise",  # S3
    # S4: "all ", up to three words each followed by whitespace, a plural of tries, an outcome
    r"all (?:\w+\s+){0,3}(?:approaches|trials|variants|attempts) (?:tested|were|failed|flat)",
    r"tested \d+ approaches",  # S5
    r"hw floor (?:re)?confirmed",  # S7: an asserted ceiling
)
PHRASES_S_ONLY = (
    r"reverted to an earlier",  # S6
    r"no kernel change",  # S8
    r"sanity[ _]bench",  # S9: methodology, not the operator
    r"stall[ _]count",  # S10
)
PHRASES_G_ONLY = (
    r"consecutive dead-end",
    r"consecutive stall",
    r"consecutive revert",
)
NON_MECHANISM = re.compile(
    "|".join(f"(?:{p})" for p in PHRASES_S_AND_G + PHRASES_S_ONLY + PHRASES_G_ONLY), re.IGNORECASE
)


def _object(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _is_stated(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def problems(payload: dict) -> Iterator[tuple[str, str]]:
    """(field, message) for every way an anti-strategy's payload fails to state a law."""
    verdict = payload.get("verdict")
    if isinstance(verdict, str) and verdict in NO_CONCLUSION_VERDICTS:
        yield "payload.verdict", f"verdict {verdict!r} reaches no conclusion"
    fact = payload.get("established_fact")
    if not isinstance(fact, dict):
        yield "payload.established_fact", "an anti-strategy needs an established_fact object"
        return
    condition = _object(fact.get("condition"))
    if not any(_is_stated(condition.get(key)) for key in CONDITION_KEYS):
        yield (
            "payload.established_fact.condition",
            "the fact names no condition (sm_arch, shape_regime, dtype or toolchain)",
        )
    mechanism = fact.get("mechanism")
    stated = mechanism.strip() if isinstance(mechanism, str) else ""
    if len(stated) < MIN_MECHANISM_CHARS:
        yield (
            "payload.established_fact.mechanism",
            f"mechanism has {len(stated)} characters, needs {MIN_MECHANISM_CHARS}",
        )
        return
    phrase = NON_MECHANISM.search(mechanism)
    if phrase is not None:
        yield (
            "payload.established_fact.mechanism",
            f"mechanism reports an outcome, not a cause: {phrase.group()!r}",
        )


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file, record in ctx.parsed():
        if record.get("type") != "anti-strategy":
            continue
        for field, message in problems(_object(record.get("payload"))):
            yield Finding(record_file.id, NAME, message, field)


# --- injection cases ----------------------------------------------------------------------


def _anti_strategy_payload(ctx: GateContext) -> dict | None:
    anti = first_of_type("anti-strategy")(ctx)
    return None if anti is None else anti["payload"]


def _fact(ctx: GateContext) -> dict | None:
    payload = _anti_strategy_payload(ctx)
    return None if payload is None else payload.setdefault("established_fact", {})


GATE = Gate(
    NAME, "store", "anti-strategies state a condition and a causal mechanism", check, alone=True
)


@GATE.edit("missing-fact", _anti_strategy_payload)
def _missing_fact(payload: dict) -> None:
    payload.pop("established_fact", None)


@GATE.edit("no-condition", _fact)
def _no_condition(fact: dict) -> None:
    fact["condition"] = {"sm_arch": None, "shape_regime": "  ", "dtype": None, "toolchain": ""}


GATE.add(
    "noise-band-mechanism",
    setting(
        _fact,
        "mechanism",
        "All four block-size variants were flat within noise on H100 at these widths.",
    ),
)
GATE.add(
    "consecutive-stall-mechanism",
    setting(
        _fact,
        "mechanism",
        "The search stopped after the third consecutive stall, so the whole-row variant "
        "was dropped from the sweep.",
    ),
)
GATE.add("short-mechanism", setting(_fact, "mechanism", "  register spills to local memory  "))
