"""Records the warm-start tests file on pages: a gate-valid strategy per kernel, product,
direction and gain."""

from __future__ import annotations

from gitkb import targets
from gitkb.testing import synthetic


def strategy(
    n: int,
    kernel: str = "softmax",
    product: str = "h100",
    pct: float = 20.0,
    direction: str | None = None,
    cases: list[str] | None = None,
    code: str | None = None,
) -> dict:
    """A gate-valid strategy for ``kernel`` on ``product`` with its own code and gain."""
    hw = targets.require(product)
    record = synthetic.strategy(0)
    record["id"] = f"{hw.vendor}.{product}.triton.{kernel}.step-{n}-s{n:02d}"
    technique = f"dir{n}" if direction is None else direction
    record["episode_key"] = f"{hw.arch}|triton|{kernel}|{technique}|operator"
    scope = record["retrieval"]["scope"]
    scope.update(vendor=hw.vendor, arch=hw.arch, product=product, operator_family=kernel)
    scope.update(operators=[kernel], architectures=[hw.arch])
    record["retrieval"]["generality"]["arch"] = hw.arch
    record["evidence"]["summary"]["measured_on"]["gpu"] = product
    record["payload"]["problem"]["operator"] = kernel
    snippet = code or f"-    y = tl.exp(x - m)\n+    y = tl.exp2((x - m) * {n + 2})\n"
    record["payload"]["implementation"]["snippet"] = snippet
    # its own technique, not the example's (whose canonical tag its diff would not show)
    record["retrieval"]["technique_tags"] = [technique, kernel]
    record["worth"]["gain"]["pct"] = pct
    record["worth"]["gain"]["metrics"][0]["delta_pct"] = pct
    if cases is not None:
        record["evidence"]["raw"]["bench_cases"] = cases
    return record
