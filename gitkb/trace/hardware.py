"""Hardware of a trace (rule 8): the flags, else the first token of the trace's metadata that
the target table maps; nothing found is a clear failure naming the flags, never a guess."""

from __future__ import annotations

from collections.abc import Iterable

from gitkb import targets
from gitkb.record.values import mapping
from gitkb.trace import TraceError
from gitkb.trace.files import TraceFiles
from gitkb.trace.options import TraceOptions


def resolve_hardware(
    files: TraceFiles, options: TraceOptions, earlier: Iterable[tuple[str, object]] = ()
) -> tuple[str, str, str | None, str]:
    """(vendor, arch, product, which token or flag decided). ``earlier``: (commit,
    solution.json) of older commits, newest first, read only when the tip's solution.json
    states no target (the producer's V1 manifest replaces the SOL seed's, rule 14)."""
    if options.vendor or options.arch or options.product:
        return _from_flags(options)
    tokens: list[tuple[str, str]] = []
    solution = mapping(files.json("solution.json"))
    for token in _target_hardware(solution):
        tokens.append(("solution.json spec.target_hardware", token))
    if not tokens:
        for commit, document in earlier:
            found = _target_hardware(mapping(document))
            if found:
                where = f"solution.json spec.target_hardware at {commit[:12]}"
                tokens += [(where, token) for token in found]
                break
    definition = mapping(files.json("definition.json"))
    for key in ("target_hardware", "gpu", "hardware"):
        for token in _as_list(definition.get(key)):
            tokens.append((f"definition.json {key}", token))
    baseline = mapping(files.json("framework_baseline.json"))
    for token in _as_list(baseline.get("arch")):
        tokens.append(("framework_baseline.json arch", token))
    for where, token in tokens:
        hw = targets.lookup(token)
        if hw is not None:
            return hw.vendor, hw.arch, hw.product, f"{where} {token!r} (table token {hw.token})"
    tried = ", ".join(repr(t) for _, t in tokens) or "none found"
    raise TraceError(
        f"no hardware token in the trace maps to a known target (tokens: {tried}); "
        "pass --vendor/--arch/--product"
    )


def _target_hardware(solution: dict) -> list[str]:
    return _as_list(mapping(solution.get("spec")).get("target_hardware"))


def _as_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _from_flags(options: TraceOptions) -> tuple[str, str, str | None, str]:
    product_hw = targets.lookup(options.product) if options.product else None
    arch = options.arch or (product_hw.arch if product_hw else None)
    vendor = options.vendor or (product_hw.vendor if product_hw else None)
    if arch and not vendor:
        vendors = {hw.vendor for hw in targets.table().values() if hw.arch == arch}
        vendor = vendors.pop() if len(vendors) == 1 else None
    if not arch or not vendor:
        raise TraceError(
            "the hardware flags do not name a known target; pass --vendor and --arch "
            f"(known arches: {', '.join(sorted(targets.arches()))}) or a known --product"
        )
    if arch not in targets.arches():
        raise TraceError(f"unknown --arch {arch!r}; known: {', '.join(sorted(targets.arches()))}")
    product = options.product.lower() if options.product else None
    return vendor, arch, product, "command-line flags"
