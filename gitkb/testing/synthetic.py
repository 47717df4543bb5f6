"""Synthetic gate-valid records for benchmarks and tests, made from the shipped strategy example."""

from __future__ import annotations

import copy
import json
from functools import cache

from gitkb.util.resources import data_dir

_ARCHES = (
    ("nvidia", "hopper", "h100"),
    ("nvidia", "blackwell", "b200"),
    ("amd", "cdna3", "mi300x"),
)
_DSLS = ("triton", "cuda", "gluon")


@cache
def _template() -> dict:
    path = next((data_dir("templates") / "examples" / "records" / "strategy").rglob("*.json"))
    return json.loads(path.read_bytes())


def strategy(n: int, families: int = 40) -> dict:
    """The n-th synthetic strategy record: a distinct id, spread over vendors, arches,
    DSLs and ``families`` operator families so store trees look like real ones."""
    record = copy.deepcopy(_template())
    vendor, arch, product = _ARCHES[n % len(_ARCHES)]
    dsl = _DSLS[(n // len(_ARCHES)) % len(_DSLS)]
    family = f"op{n % families:03d}"
    record["id"] = f"{vendor}.{product}.{dsl}.{family}.synthetic-step-s{n:05d}"
    record["episode_key"] = f"{arch}|{dsl}|{family}|synthetic_step_{n}|operator"
    scope = record["retrieval"]["scope"]
    scope.update(vendor=vendor, arch=arch, product=product, dsl=dsl, operator_family=family)
    scope["operators"] = [family]
    scope["architectures"] = [arch]
    record["retrieval"]["generality"].update(arch=arch, language=dsl)
    record["payload"]["problem"]["operator"] = family
    record["payload"]["problem"]["dsl"] = dsl
    pct = round(1 + (n * 7919) % 400 / 10, 1)
    record["worth"]["gain"]["pct"] = pct
    record["worth"]["gain"]["metrics"][0]["delta_pct"] = pct
    # Distinct code per record, as real records have: reproductions match on the code.
    implementation = record["payload"]["implementation"]
    implementation["snippet"] += f"+    unroll = tl.constexpr({n % 97 + 1})  # variant {n}\n"
    return record
