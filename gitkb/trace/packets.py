"""Packets: one self-contained, scrubbed evidence bundle per segment (docs/trace-format.md §6.5).

A packet is a deterministic function of (the trace's objects at ``tip``, the label, the
options): mining builds packets to distill records, and the trace gates build the same
packets again (``gitkb.trace.sources``) to check a record's code and numbers, so nothing a
gate needs lives only in scratch files. ``find_packet`` is how a record finds its packet.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from gitkb.trace.files import TraceFiles
from gitkb.trace.ingest import Ingest, TraceMeta, ingest
from gitkb.trace.ladder import Ladder, build_ladder
from gitkb.trace.memory import VersionRow
from gitkb.trace.options import TraceOptions
from gitkb.trace.partition import Segment, partition
from gitkb.util.attributes import attributes
from gitkb.vcs.repository import Repository

DIFF_LIMIT = 60_000
KERNEL_LIMIT = 40_000
LIST_LIMIT = 5
BODY_LIMIT = 4_000
FACT_RULE = (
    "An anti-strategy states a law: under a checkable condition (sm_arch, shape_regime, "
    "dtype or toolchain), doing the attempted change necessarily gives the bad result, "
    "because of a mechanism of at least forty characters taken from the trace's own words."
)
VERDICTS = ("accuracy-gate/ceiling", "api-limitation", "not-worth-it-here", "performance-ceiling")
AUTHORITATIVE_BASIS = (
    "the supervisor's authoritative same-allocation verification against the incumbent"
)
GEOMEAN_BASIS = "geomean against the best earlier version"
SPLIT_INSTRUCTIONS = {
    "mechanical": "one record for this one listed lever",
    "curated": "one record for this one recorded pitfall",
    "agent": "one record for the most substantial lever; name the others in the lesson",
    "journal": "one record for this one rejected experiment",
    "rejected-candidate": "one record for this one candidate the supervisor's verification "
    "rejected",
}
# Journal experiment keys beyond the ones the producer asks for, kept when an agent wrote them.
EXTRA_EXPERIMENT_FIELDS = ("conclusion", "expected_effect")


@dataclass
class Packet:
    """Everything one record may be distilled from, and checked against."""

    seg_id: str  # strategy-v<N>, anti-v<N>-NN, pitfall-v<N>-NN, refk-final, refk-v<N>
    record_type: str  # strategy, anti-strategy, reference-kernel
    seg_kind: str
    # {id, episode_key, output_dir, scope{vendor, arch, product, dsl, operator_family},
    #  workload_family, level, schema}
    target: dict
    agent_facing: dict  # scrubbed evidence the distiller sees (docs/trace-format.md §6.5)
    # {source_repo, version, git_commit, ncu_dirs, report_dir, shape_label_note}
    provenance: dict
    diff: str | None = None  # the `.diff` sibling: git diff parent..sha -- kernel.py
    kernel: str | None = None  # the `.py` sibling: kernel.py at the segment's commit
    usable_captures: list[str] = field(default_factory=list)  # dirs that measured the kernel
    evidence_extra: dict | None = None  # long-horizon granular evidence (journal, experiments)
    code_bytes: int = 0  # size of the diff and kernel siblings

    @property
    def evidence_chars(self) -> int:
        """The size of ``agent_facing`` as text, for the packet file: measured only when one
        is written (a dry run writes none), from evidence nothing changes once built."""
        return len(str(self.agent_facing))

    def as_json(self) -> dict:
        """The packet file a distiller reads (code siblings inline)."""
        return attributes(
            self,
            "seg_id record_type seg_kind target agent_facing provenance diff kernel "
            "evidence_extra evidence_chars code_bytes",
        )

    @property
    def code(self) -> str:
        """The packet's code as the verbatim and no-fabrication gates read it."""
        return (self.diff or "") + (self.kernel or "")


def diff_text(repo: Repository, parent: str | None, sha: str, path: str = "kernel.py") -> str:
    """A unified diff of one file between two commits (root commit: against nothing)."""
    before = repo.read(parent, path) if parent else None
    return unified_diff(before, repo.read(sha, path), path)


def kernel_diff(repo: Repository, row: VersionRow, texts: dict[str, str] | None = None) -> str:
    """``kernel.py`` from the code commit's parent to the code commit; by blob id when
    ingest saw both sides as regular files (``texts``: the sources ingest already read)."""
    if row.kernel_blob is None:
        return diff_text(repo, row.parent, row.code_sha)
    texts = texts or {}

    def side(sha: str) -> str | bytes:
        return texts[sha] if sha in texts else _blob(repo, sha)

    before = side(row.parent_kernel_blob) if row.parent_kernel_blob else None
    return unified_diff(before, side(row.kernel_blob), "kernel.py")


_BLOBS: dict[str, bytes] = {}


def _blob(repo: Repository, sha: str) -> bytes:
    """A kernel blob; consecutive diffs share one side."""
    if sha not in _BLOBS:
        if len(_BLOBS) > 8:
            _BLOBS.pop(next(iter(_BLOBS)))
        _BLOBS[sha] = repo.blob(sha)
    return _BLOBS[sha]


def unified_diff(before: str | bytes | None, after: str | bytes | None, path: str) -> str:
    old, new = _decoded(before), _decoded(after)
    if old == new:
        return ""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _decoded(side: str | bytes | None) -> str:
    """One side of a diff as text (bytes decoded, undecodable bytes replaced)."""
    if isinstance(side, bytes):
        return side.decode("utf-8", "replace")
    return side or ""


def build_packets(
    repo: Repository, tip: str, label: str, options: TraceOptions | None = None
) -> list[Packet]:
    """Every packet of the trace at ``tip``, in segment order."""
    options = options or TraceOptions()
    ingested = ingest(repo, tip, label, options)
    ladder = build_ladder(ingested.rows)
    segments = partition(ingested, ladder, tuple(options.existing_ids))
    return packets_from(repo, ingested, ladder, segments, options)


def packets_from(
    repo: Repository,
    ingested: Ingest,
    ladder: Ladder,
    segments: list[Segment],
    options: TraceOptions,
) -> list[Packet]:
    comparable = not any(s != ingested.meta.label for s in options.store_sources)
    return [_packet(repo, ingested, ladder, segment, options, comparable) for segment in segments]


def _gpu(meta: TraceMeta) -> str:
    product = (meta.product or "any").upper()
    return f"{product} ({meta.vendor} {meta.arch})"


def _pitfall_view(pitfall: dict) -> dict:
    return {k: v for k, v in pitfall.items() if v}


def _packet(
    repo: Repository,
    ingested: Ingest,
    ladder: Ladder,
    segment: Segment,
    options: TraceOptions,
    comparable: bool,
) -> Packet:
    meta, row = ingested.meta, segment.row
    scrub = ingested.scrubber.for_packet()
    captures = [c for c in ingested.captures if c.n == row.n]
    usable = [c.dir for c in captures if c.usable]
    report = next((c for c in captures if c.conclusion), None)
    dsl = row.dsl or "any"
    family = meta.operator_slug
    target = {
        "id": segment.id,
        "episode_key": segment.episode_key,
        "output_dir": f"records/{segment.record_type}/{meta.vendor}/{meta.arch}/{dsl}/{family}",
        "scope": {
            "vendor": meta.vendor,
            "arch": meta.arch,
            "product": meta.product or "any",
            "dsl": dsl,
            "operator_family": family,
        },
        "workload_family": meta.workload_family,
        "level": "operator",
        "schema": "clean-1.3",
    }
    step = ladder.step(row.n)
    baseline = ingested.row(ladder.milestones[0].n) if ladder.milestones else None
    vs_baseline = None
    if baseline and baseline.geomean and row.geomean and not row.carry_forward:
        vs_baseline = round((baseline.geomean - row.geomean) / baseline.geomean * 100.0, 2)
    measurements = {
        "geomean_us": row.geomean,
        "improve_pct_vs_best_so_far": segment.improve_pct,
        "improvement_basis": AUTHORITATIVE_BASIS if step and step.authoritative else GEOMEAN_BASIS,
        "geomean_improve_pct_vs_best_so_far": step.geomean_pct if step else None,
        "best_so_far_geomean_us": step.best_before if step else None,
        "baseline_geomean_us": baseline.geomean if baseline else None,
        "improve_pct_vs_baseline": vs_baseline,
        "speedup_vs_original_baseline": row.speedup_vs_original,
        "arith_mean_us": row.arith_mean,
        "n_measured_shapes": len(row.by_shape),
        "per_shape_latency": [
            {"shape": scrub.text(shape), "latency_us": value}
            for shape, value in sorted(row.by_shape, key=lambda kv: (kv[1], kv[0]))
        ],
        "correctness": {
            "status": row.correctness,
            "max_abs_err": row.max_abs_err,
            "max_rel_err": row.max_rel_err,
        },
        "comparable_with_the_store": comparable,
    }
    agent_facing: dict = {
        "operator": {
            "name": meta.operator_slug,
            "what_it_computes": scrub.text(meta.description),
            "fixed_axes": meta.constants,
            "variable_axes": meta.var_axes,
            "n_benchmarked_shapes": meta.n_shapes,
            "dsl": dsl,
            "gpu": _gpu(meta),
            "harness": meta.harness,
        },
        "what_the_run_said": {
            "change": scrub.text(row.description),
            "commit_subject": scrub.text(row.subject),
            "commit_body": scrub.text(row.body[:BODY_LIMIT]),
            "expected_impact": scrub.text(row.expected_impact),
            "category_hint": row.category,
            "gate_verdict": {"result": row.gate, "failure": scrub.text(row.gate_failure)},
        },
        "measurements": measurements,
        "profiler": {
            "conclusion": scrub.text(report.conclusion) if report else "",
            "ncu_measured_the_kernel_under_test": bool(usable),
            "stated_finding": scrub.value(row.profiler_finding),
        },
        "open_directions": [
            scrub.value(d) for d in row.open_directions[:LIST_LIMIT] if isinstance(d, dict)
        ],
        "pitfalls_recorded_here": [
            scrub.value(_pitfall_view(p)) for p in row.pitfalls if isinstance(p, dict)
        ][:LIST_LIMIT],
    }
    if segment.record_type == "anti-strategy":
        agent_facing["the_failed_lever"] = scrub.text(segment.text)
        agent_facing["attempted"] = scrub.text(segment.attempted)
        agent_facing["stated_cause"] = scrub.text(segment.cause)
        agent_facing["how_it_was_fixed"] = scrub.text(segment.fix)
        agent_facing["split_instruction"] = SPLIT_INSTRUCTIONS.get(
            segment.seg_kind, SPLIT_INSTRUCTIONS[segment.split_by]
        )
        agent_facing["established_fact_required"] = {
            "rule": FACT_RULE,
            "verdict_must_conclude": list(VERDICTS),
            "precheck": segment.fact_precheck,
            "precheck_note": "a flag for the distiller; the gates decide",
        }
    if segment.record_type == "strategy":
        builds_on = segment.builds_on
        agent_facing["builds_on"] = {
            "was_the_untouched_baseline": builds_on.get("is_baseline", False),
            "previous_approach": scrub.text(builds_on.get("description") or ""),
        }
    if row.journal is not None:
        agent_facing["journal"] = scrub.value(row.journal.excerpt())
    if segment.experiments and row.experiments:
        agent_facing["journal_experiments"] = [
            scrub.value(
                {
                    k: str(e.get(k) or "")
                    for k in ("index", "name", "hypothesis", "change", "evidence", "result")
                }
                | {"decision": str(e.get("decision") or "")}
                | {k: e[k] for k in EXTRA_EXPERIMENT_FIELDS if isinstance(e.get(k), str)}
            )
            for e in row.experiments
            if e["index"] in segment.experiments
        ]
    diff = kernel = None
    if segment.record_type == "reference-kernel":
        if segment.seg_kind == "mega-snapshot":
            snapshot = ingested.snapshots[row.n]
            source = TraceFiles(repo, meta.head, ingested.refused).read(snapshot)
        else:
            source = repo.read(row.code_sha, "kernel.py") if row.code_sha else None
        if source is not None:
            kernel = scrub.code(source.decode("utf-8", "replace")[:KERNEL_LIMIT])
            agent_facing["kernel_file"] = f"{segment.seg_id}.py"
    elif row.code_sha:
        diff = scrub.code(kernel_diff(repo, row, ingested.kernel_texts)[:DIFF_LIMIT]) or None
        if diff:
            agent_facing["diff_file"] = f"{segment.seg_id}.diff"
    provenance = {
        "source_repo": meta.label,
        "version": row.version,
        "git_commit": row.sha,
        "ncu_dirs": usable,
        "report_dir": report.dir if report else None,
        "shape_label_note": "8-hex shape ids are relabelled shape-N per packet"
        if scrub.hex_names
        else "",
    }
    return Packet(
        seg_id=segment.seg_id,
        record_type=segment.record_type,
        seg_kind=segment.seg_kind,
        target=target,
        agent_facing=agent_facing,
        provenance=provenance,
        diff=diff,
        kernel=kernel,
        usable_captures=usable,
        evidence_extra=_evidence_extra(row, segment),
        code_bytes=len((diff or "") + (kernel or "")),
    )


def _evidence_extra(row: VersionRow, segment: Segment) -> dict | None:
    """Long-horizon granular evidence of a segment whose commit is a promotion or a
    revalidation (rule 5): the journal, its experiments this record stands on, and that
    canonical commit. Every record citing such a commit carries it (journal-provenance)."""
    if row.cited_commit_kind is None or row.sha is None:
        return None
    if row.cited_commit_kind == "promotion":
        journal = row.journal_path or row.experiments_from or row.memory_path
    else:
        # A non-promotion's memory holds the episode's experiments (else a committed
        # journal does); its commit re-validated the incumbent the numbers describe.
        journal = row.experiments_from or row.memory_path
    return {
        "journal": journal,
        "experiments": list(segment.experiments),
        f"{row.cited_commit_kind}_commit": row.sha,
    }


class PacketIndex:
    """The packets of a trace, looked up by record (``find``) in constant time."""

    def __init__(self, packets: list[Packet]) -> None:
        self.by_id: dict[str, Packet] = {}
        self.by_version: dict[tuple, list[Packet]] = {}
        for packet in packets:
            self.by_id.setdefault(packet.target.get("id"), packet)
            key = (packet.provenance["source_repo"], packet.provenance["version"])
            self.by_version.setdefault(key, []).append(packet)

    def find(self, record: dict) -> Packet | None:
        """The packet of a record: same target id; else same (source_repo, version) and
        the same episode key; else the first with the same (source_repo, version)."""
        found = self.by_id.get(record.get("id"))
        if found is not None:
            return found
        raw = ((record.get("evidence") or {}).get("raw")) or {}
        key = (raw.get("source_repo"), raw.get("version"))
        if not key[1]:
            return None
        same = self.by_version.get(key, [])
        episode_key = record.get("episode_key")
        for packet in same:
            if packet.target.get("episode_key") == episode_key:
                return packet
        return same[0] if same else None


def find_packet(packets: list[Packet], record: dict) -> Packet | None:
    return PacketIndex(packets).find(record)
