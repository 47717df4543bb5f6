"""The packet: everything one record may be distilled from, and checked against.

A packet is a deterministic function of (the trace's objects, the segment):
mining builds packets to distill records, and the trace gates rebuild the
same packets from the store's ``refs/kb/traces/<label>`` to check a record's
code and numbers, so nothing a gate needs lives only in scratch files.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Packet:
    seg_id: str  # strategy-v<N>, anti-v<N>-NN, pitfall-v<N>-NN, refk-final, refk-v<N>
    record_type: str  # strategy, anti-strategy, reference-kernel
    seg_kind: str
    # {id, episode_key, output_dir, scope{vendor, arch, product, dsl, operator_family},
    #  workload_family, level, schema}
    target: dict
    agent_facing: dict  # scrubbed evidence the distiller sees (TRACE_FORMAT §6.5)
    # {source_repo, version, git_commit, ncu_dirs, report_dir, shape_label_note}
    provenance: dict
    diff: str | None = None  # the `.diff` sibling: git diff parent..sha -- kernel.py
    kernel: str | None = None  # the `.py` sibling: kernel.py at the segment's commit
    usable_captures: list[str] = field(
        default_factory=list
    )  # profile dirs that measured the kernel
    evidence_extra: dict | None = None  # long-horizon granular evidence (journal path, experiments)
    evidence_chars: int = 0  # size of agent_facing as text
    code_bytes: int = 0  # size of the diff and kernel siblings

    def as_json(self) -> dict:
        """The packet file a distiller reads (code siblings inline)."""
        return {
            "seg_id": self.seg_id,
            "record_type": self.record_type,
            "seg_kind": self.seg_kind,
            "target": self.target,
            "agent_facing": self.agent_facing,
            "provenance": self.provenance,
            "diff": self.diff,
            "kernel": self.kernel,
            "evidence_chars": self.evidence_chars,
            "code_bytes": self.code_bytes,
        }

    @property
    def code(self) -> str:
        """The packet's code as the verbatim and no-fabrication gates read it."""
        return (self.diff or "") + (self.kernel or "")


@dataclass
class MineOptions:
    """What a mining run may be told from outside the trace; the packets depend on these.

    ``existing_ids``: ids already in the live store (ids are allocated above them);
    empty means ids start at 01. ``store_sources``: the traces the store already holds
    records of this operator from (another one makes the gain not comparable).
    ``denylist``: private substrings scrubbed from packets.
    """

    vendor: str | None = None
    arch: str | None = None
    product: str | None = None
    dsl: str | None = None
    harness: str | None = None
    existing_ids: tuple[str, ...] = ()
    store_sources: tuple[str, ...] = ()  # source_repo of the store's records of this operator
    non_target_kernels: tuple[str, ...] = ()
    denylist: tuple[str, ...] = ()
