"""Store gate `self-contained` (spec 4.7): a record reads on its own and states its gain
as a relative, sourced, consistent number.

An agent reading one record on another machine cannot use "41.8 us" or a
bare latency in microseconds: absolute times depend on the GPU, harness and
shapes. So ``worth.gain`` may only carry percentages, and its headline ``pct``
must be one of the measured primary deltas. Payload prose is not checked for
latencies, only ``worth.gain`` is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gitkb.gates import Finding, Gate, GateContext, first_of_type

NAME = "self-contained"

# A number (digits and dots; a lone '.' counts) then an absolute time unit: '41.8 us', '3ms',
# 'done. us'. The micro sign U+00B5 and the Greek mu U+03BC are both accepted.
ABSOLUTE_LATENCY = re.compile(r"[\d.]+\s*(?:us|\u00b5s|\u03bcs|ms)\b", re.IGNORECASE)
TIME_UNITS = frozenset(
    unit.casefold()
    for unit in ("us", "\u00b5s", "\u03bcs", "ms", "s", "sec", "ns", "cycle", "cycles")
)
CODE_CARRYING_TYPES = ("strategy", "reference-kernel")
METRIC_LISTS = ("metrics", "regressions")
DIFF_FORMAT_PREFIX = "unified-diff"


def _object(value: object) -> dict:
    """A block as a dict; a wrong-typed or missing block reads as empty."""
    return value if isinstance(value, dict) else {}


def _entries(value: object) -> list[dict]:
    """The object entries of a list; a wrong-typed list or entry reads as absent."""
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def is_blank(value: object) -> bool:
    """Blank: not a string, or nothing left after stripping."""
    return not isinstance(value, str) or not value.strip()


def is_time_unit(unit: object) -> bool:
    return isinstance(unit, str) and unit.strip().casefold() in TIME_UNITS


def states_absolute_latency(value: object) -> bool:
    return isinstance(value, str) and ABSOLUTE_LATENCY.search(value) is not None


def has_measured_value(metric: dict) -> bool:
    """A metric carries a number: one of delta_pct, before, after is present and non-null."""
    return any(metric.get(key) is not None for key in ("delta_pct", "before", "after"))


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- the checks, each a generator of (field, message) ------------------------------------


def _prose_problems(record: dict) -> Iterator[tuple[str, str]]:
    payload = _object(record.get("payload"))
    problem = _object(payload.get("problem"))
    if is_blank(payload.get("goal")):
        yield "payload.goal", "goal is blank"
    if is_blank(problem.get("statement")):
        yield "payload.problem.statement", "problem statement is blank"
    if is_blank(problem.get("target")):
        yield "payload.problem.target", "problem target is blank"
    if (
        record.get("level") == "operator"
        and record.get("type") in CODE_CARRYING_TYPES
        and not problem.get("operator")
    ):
        yield "payload.problem.operator", "an operator-level record names no problem.operator"


def _gain_string_problems(gain: dict) -> Iterator[tuple[str, str]]:
    if not gain.get("basis"):
        yield "worth.gain.basis", "gain basis is missing"
    for key, value in gain.items():
        if states_absolute_latency(value):
            yield f"worth.gain.{key}", f"absolute latency in worth.gain.{key}: {value!r}"


def _metric_problems(gain: dict) -> Iterator[tuple[str, str]]:
    for list_name in METRIC_LISTS:
        for position, metric in enumerate(_entries(gain.get(list_name))):
            where = f"worth.gain.{list_name}[{position}]"
            if is_time_unit(metric.get("unit")):
                yield (
                    f"{where}.unit",
                    f"time unit {metric.get('unit')!r}: gains are relative, not absolute",
                )
            if metric.get("metric") == "latency" and (
                metric.get("before") is not None or metric.get("after") is not None
            ):
                yield where, "a latency metric carries absolute before/after values"
            for key in ("note", "measured_over"):
                if states_absolute_latency(metric.get(key)):
                    yield f"{where}.{key}", f"absolute latency in {key}: {metric.get(key)!r}"
            if not metric.get("source"):
                yield f"{where}.source", "metric has no source"
            if not has_measured_value(metric) and not metric.get("note"):
                yield where, "metric has no delta_pct, before or after, and no note saying why"


def _measured_strategy_problems(record: dict, gain: dict) -> Iterator[tuple[str, str]]:
    if gain.get("basis") != "measured" or record.get("type") != "strategy":
        return
    if not any(m.get("delta_pct") is not None for m in _entries(gain.get("metrics"))):
        yield "worth.gain.metrics", "a measured strategy has no metric with a delta_pct"


def _pct_problems(gain: dict) -> Iterator[tuple[str, str]]:
    primary = gain.get("primary")
    headline = [
        m.get("delta_pct")
        for m in _entries(gain.get("metrics"))
        if m.get("metric") == primary and m.get("delta_pct") is not None
    ]
    if "pct" not in gain:
        if headline:
            yield "worth.gain.pct", f"pct is absent although the {primary} metrics give {headline}"
        return
    pct = gain["pct"]
    if pct is None and not headline:
        return
    if not (is_number(pct) and any(is_number(v) and v == pct for v in headline)):
        yield (
            "worth.gain.pct",
            f"pct {pct!r} is not one of the primary ({primary!r}) metric deltas {headline}",
        )


def _implementation_problems(record: dict) -> Iterator[tuple[str, str]]:
    if record.get("type") not in CODE_CARRYING_TYPES:
        return
    payload = _object(record.get("payload"))
    builds_on = _object(_object(payload.get("trace")).get("builds_on"))
    if is_blank(builds_on.get("approach")):
        yield "payload.trace.builds_on.approach", "the approach this builds on is blank"
    implementation = _object(payload.get("implementation"))
    code_format, snippet = implementation.get("format"), implementation.get("snippet")
    if code_format != "none" and is_blank(snippet):
        yield (
            "payload.implementation.snippet",
            f"format is {code_format!r} but the snippet is blank",
        )
    if (
        isinstance(snippet, str)
        and snippet.lstrip().startswith(("-", "+"))
        and not (isinstance(code_format, str) and code_format.startswith(DIFF_FORMAT_PREFIX))
    ):
        yield (
            "payload.implementation.format",
            f"the snippet is a diff but format is {code_format!r}",
        )


def problems(record: dict) -> Iterator[tuple[str, str]]:
    """(field, message) for every way one record is not self-contained."""
    gain = _object(_object(record.get("worth")).get("gain"))
    yield from _prose_problems(record)
    yield from _gain_string_problems(gain)
    yield from _metric_problems(gain)
    yield from _measured_strategy_problems(record, gain)
    yield from _pct_problems(gain)
    yield from _implementation_problems(record)


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file, record in ctx.parsed():
        for field, message in problems(record):
            yield Finding(record_file.id, NAME, message, field)


# --- injection cases ----------------------------------------------------------------------


_strategy = first_of_type("strategy")

GATE = Gate(
    NAME, "store", "records stand alone; gains are relative, sourced, consistent", check, alone=True
)


@GATE.case("blank-goal")
def _blank_goal(ctx: GateContext) -> bool:
    ctx.records[0].data["payload"]["goal"] = "   "
    return True


@GATE.edit("latency-in-gain-note", _strategy)
def _latency_in_gain_note(strategy: dict) -> None:
    strategy["worth"]["gain"]["note"] = "geomean went from 53.6 us to 41.8 us"


@GATE.edit("microsecond-metric", _strategy)
def _microsecond_metric(strategy: dict) -> None:
    metric = strategy["worth"]["gain"]["metrics"][0]
    metric.update(unit="us", before=53.6, after=41.8)


@GATE.edit("pct-not-headline", _strategy)
def _pct_not_headline(strategy: dict) -> None:
    strategy["worth"]["gain"]["pct"] = 25.0


@GATE.edit("diff-labelled-source", _strategy)
def _diff_labelled_source(strategy: dict) -> None:
    strategy["payload"]["implementation"]["format"] = "source (verbatim)"


@GATE.edit("missing-operator", _strategy)
def _missing_operator(strategy: dict) -> None:
    strategy["payload"]["problem"]["operator"] = None
