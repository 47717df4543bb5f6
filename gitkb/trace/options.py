"""What a mining run may be told from outside the trace; the packets depend on these."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_NON_TARGET_KERNELS = ("distribution_elementwise_grid_stride_kernel",)
DEFAULT_HARNESS = "the trace's own benchmark harness"


@dataclass
class TraceOptions:
    """Hardware and naming overrides, and what the store says about this operator.

    ``existing_ids``: ids already in the live store (ids are allocated above them);
    empty means ids start at 01. ``store_sources``: the traces the store already holds
    records of this operator from (another one makes the gain not comparable).
    ``denylist``: private substrings scrubbed from packets (None: the file the
    GITKB_DENYLIST environment variable names, as the gates read it).
    """

    vendor: str | None = None
    arch: str | None = None
    product: str | None = None
    dsl: str | None = None
    harness: str | None = None
    existing_ids: tuple[str, ...] = ()
    store_sources: tuple[str, ...] = ()  # source_repo of the store's records of this operator
    non_target_kernels: tuple[str, ...] = ()
    denylist: tuple[str, ...] | None = None
