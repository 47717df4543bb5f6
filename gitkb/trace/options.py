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
    operator: str | None = None  # the operator's name when the trace's metadata has none
    existing_ids: tuple[str, ...] = ()
    store_sources: tuple[str, ...] = ()  # source_repo of the store's records of this operator
    non_target_kernels: tuple[str, ...] = ()
    denylist: tuple[str, ...] | None = None

    def stored(self) -> dict:
        """What a rebuild of the packets needs to know of this run (``traces/<label>.json``
        beside the records): every override that changes a packet, nothing private."""
        document = {k: getattr(self, k) for k in STORED_TEXT if getattr(self, k)}
        if self.non_target_kernels:
            document["non_target_kernels"] = list(self.non_target_kernels)
        return document

    @classmethod
    def from_stored(cls, document: object) -> TraceOptions:
        """The options a run recorded (ill-typed values are ignored, never guessed)."""
        if not isinstance(document, dict):
            return cls()
        options = cls(**{k: document[k] for k in STORED_TEXT if isinstance(document.get(k), str)})
        kernels = document.get("non_target_kernels")
        if isinstance(kernels, list):
            options.non_target_kernels = tuple(k for k in kernels if isinstance(k, str))
        return options


STORED_TEXT = ("vendor", "arch", "product", "dsl", "harness", "operator")
