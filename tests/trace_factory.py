"""Build real trace repositories (C git) shaped like an optimizer's campaign workspace.

A ``Trace`` records commits in memory and writes them all with one ``git
fast-import``, so a 1,000-version trace takes a fraction of a second. Files are
given as text, bytes, JSON-able dicts/lists, ``Symlink(target)`` or None
(delete). Helpers cover both producer paths of docs/trace-format.md:

* legacy: ``legacy_keep`` (``v<N>: committed (+X%)``), ``legacy_revert``
  (``v<N>: reverted (...) — dead-end recorded: a, b``), optional follow-up
  memory commits;
* long-horizon: ``v0_two_commit`` / ``v1_two_commit`` (code commit, then a
  metadata-only commit), ``promote`` (``episode <E>: promote ...`` with
  ``memory/long_horizon_e<EEEE>.json`` and its journal), ``non_promotion``
  (metadata-only ``v<N>: long-horizon episode <E> <status>`` carrying the
  incumbent forward).

Ready-made traces: ``legacy_trace``, ``long_horizon_trace``, ``kernel_only_trace``.
Every number a test asserts on is chosen here, so tests can say exactly what
mining must find.

    t = Trace(tmp_path / "kernel_opt_001_softmax")
    t.setup(hardware="NVIDIA H100")
    t.legacy_keep(0, 100.0, "baseline softmax, three passes over each row")
    t.legacy_keep(1, 80.0, "merge the max and sum loops with an online rescale")
    path = t.write()
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

AUTHOR = "Trace Agent <agent@example.invalid>"
LONG_HORIZON_AUTHOR = "atrex-long-horizon <atrex-long-horizon@local>"
START_TIME = 1_700_000_000


@dataclass(frozen=True)
class Symlink:
    """A tree entry of mode 120000 pointing at ``target``."""

    target: str


@dataclass
class _Commit:
    ref: str
    mark: int
    subject: str
    body: str
    files: dict
    author: str
    when: int
    parent_mark: int | None  # None: continue the ref (or start it)


def _blob(value) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return (json.dumps(value, indent=2) + "\n").encode("utf-8")


def kernel_source(n: int, dsl: str = "triton", note: str = "") -> str:
    """A kernel.py for version ``n``: a few lines change with every version, all > 12 chars."""
    header = {
        "triton": "import triton\nimport triton.language as tl\n",
        "gluon": "from triton.experimental import gluon  # gluon kernel\n",
        "cuda": "from torch.utils.cpp_extension import load_inline\n",
        "any": "import torch\n",
    }[dsl]
    lines = [
        header,
        "",
        "@triton.jit" if dsl == "triton" else "# kernel entry",
        "def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):",
        "    row = tl.program_id(0)",
        f"    cols = tl.arange(0, BLOCK)  # step {n}",
        f"    x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other=-{n + 1}.0)",
        f"    scale_{n} = tl.full([BLOCK], {n + 2}, tl.float32)",
        "    m = tl.max(x, axis=0)",
        "    e = tl.exp(x - m)",
        f"    y = e / tl.sum(e, axis=0) * scale_{n} / {n + 2}",
        "    tl.store(out_ptr + row * n_cols + cols, y, mask=cols < n_cols)",
        "",
    ]
    if note:
        lines.insert(4, f"    # {note}")
    return "\n".join(lines) + "\n"


def memory(
    version: str,
    geomean: float | None,
    *,
    by_shape: dict | None = None,
    correctness: str | None = "PASS",
    gate: str | None = "PASS",
    gate_failure: str | None = None,
    description: str = "",
    category: str | None = None,
    pitfalls: list | None = None,
    open_directions: list | None = None,
    performance: dict | None = None,
    expected_impact: str = "",
    **extra,
) -> dict:
    """A ``memory/v<N>.json`` document; ``performance`` keys override the defaults."""
    perf: dict = {}
    if geomean is not None:
        perf = {
            "latency_us": geomean,
            "latency_us_geomean": geomean,
            "latency_us_arith_mean": round(geomean * 1.1, 3),
            "latency_us_by_shape": by_shape
            if by_shape is not None
            else {"0": round(geomean * 0.5, 3), "1": geomean, "2": round(geomean * 2, 3)},
            "measurement_status": "complete",
            "measurement_subject": "candidate",
        }
    perf.update(performance or {})
    doc: dict = {"version": version, "timestamp": "2026-01-01T00:00:00+00:00", "performance": perf}
    if correctness is not None:
        doc["correctness"] = {"status": correctness, "max_abs_err": 0.0039, "max_rel_err": 0.0011}
    if gate is not None:
        doc["quality_gate"] = {"result": gate, "failure_reason": gate_failure}
    doc["optimization"] = {
        "action_category": category or "kernel_change",
        "action_description": description,
        "expected_impact": expected_impact,
    }
    doc["open_directions"] = open_directions or []
    doc["pitfalls_and_fixes"] = pitfalls or []
    doc.update(extra)
    return doc


# The journal keys the producer copies into canonical memory; any other key of an
# experiment is folded into one sorted-key JSON ``details`` string (long_horizon/campaign.py).
MEMORY_EXPERIMENT_FIELDS = ("name", "hypothesis", "change", "evidence", "result", "decision",
                            "timestamp")  # fmt: skip


def memory_experience(experiments: list[dict]) -> dict:
    """``_memory_experience``: each journal experiment as canonical memory holds it."""
    compact = []
    for index, raw in enumerate(experiments, start=1):
        entry: dict = {"index": index}
        entry |= {k: str(raw[k]) for k in MEMORY_EXPERIMENT_FIELDS if raw.get(k)}
        extra = {k: v for k, v in raw.items() if k not in MEMORY_EXPERIMENT_FIELDS}
        if extra:
            entry["details"] = json.dumps(extra, ensure_ascii=False, sort_keys=True)
        compact.append(entry)
    return {
        "experiment_count": len(experiments),
        "recorded_experiment_count": len(compact),
        "experiments": compact,
    }


def _sol_manifest(name: str, hardware: list) -> dict:
    return {
        "name": f"{name}_v0_pytorch",
        "definition": name,
        "author": "atrex-aka",
        "spec": {
            "languages": ["pytorch"],
            "target_hardware": hardware,
            "entry_point": "kernel.py::run",
            "dependencies": ["torch"],
            "destination_passing_style": True,
        },
        "sources": [{"path": "kernel.py"}],
    }


@dataclass
class Trace:
    """A trace repository under construction; ``write()`` makes it real."""

    path: Path
    commits: list[_Commit] = field(default_factory=list)
    worktree_files: dict = field(default_factory=dict)
    _clock: int = START_TIME
    _marks: int = 0
    kernel: str = ""  # the kernel.py at the head of main, as the helpers last wrote it

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    # ----------------------------------------------------------------- primitives

    def commit(
        self,
        subject: str,
        files: dict | None = None,
        body: str = "",
        author: str = AUTHOR,
        ref: str = "refs/heads/main",
        parent: int | None = None,
    ) -> int:
        """Record one commit on ``ref``; returns its mark (usable as ``parent`` of a branch)."""
        self._marks += 1
        self._clock += 60
        self.commits.append(
            _Commit(ref, self._marks, subject, body, dict(files or {}), author, self._clock, parent)
        )
        if ref == "refs/heads/main" and "kernel.py" in (files or {}):
            value = files["kernel.py"]
            self.kernel = value if isinstance(value, str) else ""
        return self._marks

    def worktree(self, path: str, content) -> None:
        """A file left in the work tree and never committed (git-excluded profiles, attempts)."""
        self.worktree_files[path] = content

    def write(self, bare: bool = False) -> Path:
        """Create the repository with C git (one fast-import) and return its path."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        init = ["git", "init", "-q", "-b", "main"] + (["--bare"] if bare else [])
        subprocess.run([*init, str(self.path)], check=True)
        stream = bytearray()
        for c in self.commits:
            name, email = c.author.rsplit(" <", 1)
            ident = f"{name} <{email} {c.when} +0000\n".encode()
            message = (c.subject + ("\n\n" + c.body if c.body else "") + "\n").encode()
            stream += f"commit {c.ref}\nmark :{c.mark}\n".encode()
            stream += b"author " + ident + b"committer " + ident
            stream += f"data {len(message)}\n".encode() + message
            if c.parent_mark is not None:
                stream += f"from :{c.parent_mark}\n".encode()
            for path, value in c.files.items():
                if value is None:
                    stream += f"D {path}\n".encode()
                    continue
                mode = "120000" if isinstance(value, Symlink) else "100644"
                data = value.target.encode() if isinstance(value, Symlink) else _blob(value)
                stream += f"M {mode} inline {path}\ndata {len(data)}\n".encode() + data + b"\n"
            stream += b"\n"
        subprocess.run(
            ["git", "fast-import", "--quiet", "--force"],
            cwd=self.path,
            input=bytes(stream),
            check=True,
        )
        if not bare and self.commits:
            subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=self.path, check=True)
        for path, value in self.worktree_files.items():
            target = self.path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_blob(value))
        return self.path

    # ----------------------------------------------------------------- trace metadata

    def setup(
        self,
        hardware: str | list | None = "NVIDIA H100",
        name: str = "softmax",
        description: str = "Row-wise softmax over the last axis of a 2-D fp32 tensor",
        definition: bool = True,
        framework_arch: str | None = None,
    ) -> int:
        """The operator files an SOL trace starts with (definition, solution, workload)."""
        files: dict = {}
        if definition:
            files["definition.json"] = {
                "name": name,
                "description": description,
                "axes": {
                    "cols": {"type": "const", "value": 4096},
                    "rows": {"type": "var"},
                },
            }
            files["workload.jsonl"] = "".join(
                json.dumps({"uuid": f"shape-{i}", "rows": 2**i}) + "\n" for i in range(3)
            )
        if hardware is not None:
            targets = hardware if isinstance(hardware, list) else [hardware]
            files["solution.json"] = {"spec": {"target_hardware": targets, "languages": ["py"]}}
        if framework_arch:
            files["framework_baseline.json"] = {"arch": framework_arch, "platform": "linux"}
        return self.commit("initial: operator files", files)

    # ----------------------------------------------------------------- legacy producer

    def legacy_keep(
        self,
        n: int,
        geomean: float,
        description: str,
        *,
        pct: str | None = None,
        body: str = "",
        dsl: str = "triton",
        memory_later: bool = False,
        kernel: str | None = None,
        **memory_fields,
    ) -> int:
        """``v<N>: committed (+X%)``: kernel.py changes; memory in the same commit, or in a
        follow-up ``v<N>: record memory`` commit when ``memory_later``."""
        subject = f"v{n}: committed ({pct or '+0.0%'})" if n else "v0: baseline"
        doc = memory(f"v{n}", geomean, description=description, **memory_fields)
        files = {"kernel.py": kernel if kernel is not None else kernel_source(n, dsl)}
        if memory_later:
            mark = self.commit(subject, files, body)
            self.commit(f"v{n}: record memory", {f"memory/v{n}.json": doc})
            return mark
        files[f"memory/v{n}.json"] = doc
        return self.commit(subject, files, body)

    def legacy_revert(
        self,
        n: int,
        geomean: float | None,
        reason: str,
        deadends: list[str] | None = None,
        *,
        next_direction: str = "",
        body: str = "",
        **memory_fields,
    ) -> int:
        """``v<N>: reverted (<reason>) — dead-end recorded: a, b``: memory only, no kernel."""
        subject = f"v{n}: reverted ({reason}) — dead-end recorded"
        if deadends:
            subject += ": " + ", ".join(deadends)
        if next_direction:
            subject += f". Next: {next_direction}"
        memory_fields.setdefault("gate", "FAIL")
        doc = memory(f"v{n}", geomean, **memory_fields)
        return self.commit(subject, {f"memory/v{n}.json": doc}, body)

    # ----------------------------------------------------------------- long-horizon producer

    def v0_two_commit(self, geomean: float, **memory_fields) -> int:
        """``V0: baseline kernel`` (code) then ``V0: record baseline measurement`` (memory)."""
        self.commit("V0: baseline kernel", {"kernel.py": kernel_source(0, "any")})
        memory_fields.setdefault("category", "baseline")
        doc = memory("v0", geomean, description="PyTorch reference baseline", **memory_fields)
        return self.commit(
            "V0: record baseline measurement",
            {"memory/v0.json": doc, "baseline_report.md": "baseline\n"},
            author=LONG_HORIZON_AUTHOR,
        )

    def v1_two_commit(self, geomean: float, framework: str = "triton", **memory_fields) -> int:
        """V1 C1 (kernel + solution) then the C2 pin (framework_baseline.json + memory)."""
        self.commit(
            f"v1: framework baseline ({framework}) replacing the V0 PyTorch wrapper",
            {"kernel.py": kernel_source(1, "triton")},
            author=LONG_HORIZON_AUTHOR,
        )
        memory_fields.setdefault("category", "framework_baseline")
        memory_fields.setdefault(
            "description", "Triton framework baseline: one program per row, whole row in registers"
        )
        doc = memory("v1", geomean, **memory_fields)
        return self.commit(
            "v1: pin framework baseline 0a1b2c3d",
            {"memory/v1.json": doc, "framework_baseline.json": {"framework": framework}},
            author=LONG_HORIZON_AUTHOR,
        )

    def promote(
        self,
        episode: int,
        n: int,
        geomean: float,
        improvement_pct: float,
        description: str,
        experiments: list[dict] | None = None,
        **memory_fields,
    ) -> int:
        """``episode <E>: promote verified long-horizon candidate``: squash of kernel.py plus
        ``memory/long_horizon_e<EEEE>.json`` (attempt + journal) and ``memory/v<N>.json``."""
        experiments = experiments or [
            {
                "name": "main lever",
                "hypothesis": description,
                "change": description,
                "evidence": "dev run faster on every shape",
                "result": "faster",
                "decision": "continue",
            }
        ]
        memory_fields.setdefault("category", "long_horizon_episode")
        perf = {
            "measurement_source": "authoritative_verification",
            "comparison_method": "same_allocation_abba",
            "authoritative_improvement_pct": improvement_pct,
        }
        perf.update(memory_fields.pop("performance", {}))
        doc = memory(
            f"v{n}",
            geomean,
            description=description,
            performance=perf,
            experience=memory_experience(experiments),
            long_horizon={"status": "candidate_ready", "mode": "full", "verification": "abba"},
            git_commit_hash="5e0c1f9a2b7d4c3e8f6a1b2c3d4e5f6a7b8c9d0e",
            **memory_fields,
        )
        journal = {
            "episode": episode,
            "version": n,
            "status": "candidate_ready",
            "accepted": True,
            "summary": description,
            "verification": {
                "gate": "PASS",
                "improvement_pct": improvement_pct,
                "artifact": f"/home/agent/work/.atrex_long_horizon/verify/e{episode:04d}",
            },
            "journal": {
                "schema_version": 1,
                "episode": episode,
                "memory_version": f"v{n}",
                "state": "candidate_ready",
                "experiments": experiments,
                "outcome": {"summary": description, "next_directions": []},
            },
        }
        files = {
            "kernel.py": kernel_source(n, "triton", note=description[:60]),
            f"memory/long_horizon_e{episode:04d}.json": journal,
            f"memory/v{n}.json": doc,
        }
        return self.commit(
            f"episode {episode}: promote verified long-horizon candidate",
            files,
            author=LONG_HORIZON_AUTHOR,
        )

    def non_promotion(
        self,
        n: int,
        episode: int,
        status: str,
        incumbent: str,
        incumbent_geomean: float,
        experiments: list[dict] | None = None,
        failure_reason: str = "candidate was not faster than the incumbent",
        description: str | None = None,
        candidate_commit: str | None = None,
    ) -> int:
        """``v<N>: long-horizon episode <E> <status>``: memory repeats the incumbent's numbers
        (carry-forward), correctness PASS, quality gate FAIL."""
        experiments = experiments or []
        doc = memory(
            f"v{n}",
            incumbent_geomean,
            gate="FAIL",
            gate_failure=failure_reason,
            category="long_horizon_episode",
            description=description or f"long-horizon episode {episode} ended {status}",
            performance={
                "measurement_subject": "incumbent",
                "measurement_source": "canonical_incumbent_carry_forward",
                "carried_from_version": incumbent,
            },
            experience=memory_experience(experiments),
            long_horizon={"status": status, "candidate_commit": candidate_commit, "mode": "full"},
            git_commit_hash=None,
        )
        return self.commit(
            f"v{n}: long-horizon episode {episode} {status}",
            {f"memory/v{n}.json": doc},
            author=LONG_HORIZON_AUTHOR,
        )

    # ----------------------------------------------------------------- the producer's own shapes

    def sol_seed(self, geomean: float, hardware: list | None = None, name: str = "softmax") -> int:
        """``reference/sol_seed.py``: one ``V0: baseline (SOL reference wrapper)`` commit with
        the operator files, the V0 kernel and the SOL manifest (``target_hardware`` B200 and
        LOCAL), then ``V0: record baseline measurement`` (memory and baseline report)."""
        source = self.commit(
            "V0: baseline (SOL reference wrapper)",
            {
                "definition.json": {
                    "name": name,
                    "description": "Row-wise softmax over the last axis of a 2-D bf16 tensor",
                    "axes": {"cols": {"type": "const", "value": 4096}, "rows": {"type": "var"}},
                },
                "workload.jsonl": "".join(
                    json.dumps({"uuid": f"{i:08d}-aaaa-bbbb", "rows": 2**i}) + "\n"
                    for i in range(3)
                ),
                "solution.json": _sol_manifest(name, hardware or ["B200", "LOCAL"]),
                "kernel.py": kernel_source(0, "any"),
                "test_kernel.py": "# immutable evaluator\n",
                "README.md": f"# kernel_opt_{name}\n",
            },
            author="GPU Kernel Optimizer <gpu-kernel-optimizer@local>",
        )
        doc = memory(
            "v0",
            geomean,
            category="baseline",
            description="verbatim reference wrapper measured by the official full-workload "
            "evaluator",
            git_commit_hash=f"{source:040x}",
        )
        doc["optimization"]["expected_impact"] = (
            "correctness and latency reference for later versions"
        )
        return self.commit(
            "V0: record baseline measurement",
            {"memory/v0.json": doc, "baseline_report.md": "baseline\n"},
            author="GPU Kernel Optimizer <gpu-kernel-optimizer@local>",
        )

    def framework_v1(self, geomean: float, framework: str = "triton", arch: str = "sm_100") -> int:
        """``_commit_framework_baseline``: C1 holds only the kernel and the native manifest
        (no ``target_hardware``), C2 pins it (``framework_baseline.json`` and memory)."""
        self.commit(
            f"v1: framework baseline ({framework}) replacing the V0 PyTorch wrapper",
            {
                "kernel.py": kernel_source(1, "triton"),
                "solution.json": {"spec": {"languages": ["python", framework]}},
            },
        )
        doc = memory(
            "v1",
            geomean,
            category="framework_baseline",
            description="Triton framework baseline: one program per row, whole row in registers",
            framework_baseline={"framework": framework, "validated_stages": ["correctness"]},
        )
        return self.commit(
            "v1: pin framework baseline 0a1b2c3d",
            {
                "memory/v1.json": doc,
                "framework_baseline.json": {
                    "framework": framework,
                    "arch": arch,
                    "platform": "B200",
                },
            },
        )

    def episode_branch(self, episode: int, base: int, n: int, trials: int = 2) -> int:
        """The episode's private checkpoints on ``atrex/long-e<EEEE>-<8hex>``, which the
        squash promotion leaves unreachable from HEAD; returns the last one's mark."""
        ref = f"refs/heads/atrex/long-e{episode:04d}-1a2b3c4d"
        mark = base
        for k in range(1, trials + 1):
            mark = self.commit(
                f"v{n} trial {k}: fast kernel candidate",
                {"kernel.py": kernel_source(100 + n * 10 + k, "triton")},
                author=LONG_HORIZON_AUTHOR,
                ref=ref,
                parent=mark if k == 1 else None,
            )
        return mark

    def rejected_candidate(
        self,
        n: int,
        episode: int,
        incumbent: str,
        incumbent_geomean: float,
        summary: str,
        experiments: list[dict],
        improvement: float = -2.7027027027027026,
    ) -> int:
        """``candidate_ready`` that the supervisor's ABBA refused: the outcome record carries
        the incumbent forward and names the gate failure in the verifier's own words."""
        return self.non_promotion(
            n,
            episode,
            "candidate_ready",
            incumbent,
            incumbent_geomean,
            experiments=experiments,
            failure_reason=f"candidate improvement {improvement} did not exceed 0.000%",
            description=summary,
            candidate_commit="9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
        )

    def profile(self, n: int, kernel_name: str, report: str = "", suffix: str = "") -> int:
        """A committed NVIDIA capture ``profiles/v<N>[_suffix]/`` (summary.txt, REPORT.md)."""
        base = f"profiles/v{n}{'_' + suffix if suffix else ''}"
        files = {
            f"{base}/summary.txt": f"== ncu summary ==\nKernel: {kernel_name}\nDuration: 12.5 us\n",
            f"{base}/analysis/metrics_key_run.json": {"__kernel_name__": kernel_name},
        }
        if report:
            files[f"{base}/REPORT.md"] = report
        return self.commit(f"v{n}: profile capture", files)


# --------------------------------------------------------------------------- ready-made traces

SPILL_DEADEND = (
    "BLOCK 8192 whole-row load spills registers because 128 threads hold 64 fp32 values each"
)
SMEM_DEADEND = "double buffering in shared memory does not fit on sm_90 at 228 KB per SM"


TMA_EXPERIMENT = {
    "name": "tma row loads",
    "hypothesis": "bulk copies hide the load latency",
    "change": "load each row with a TMA descriptor",
    "evidence": "slower on every shape",
    "result": "slower on sm_100 because the TMA descriptor setup per row exceeds the load "
    "time of a 16 KB row, so the copy engine never overlaps",
    "decision": "revert",
}


def legacy_trace(path: Path, hardware: str | None = "NVIDIA H100", bare: bool = False) -> Path:
    """A legacy trace: v0 baseline 100 us, v1 80 us (milestone), v2 reverted with two listed
    dead-ends, v3 60 us (milestone, memory in a follow-up commit, with a curated pitfall),
    v4 59.9 us (under 1.5%), v5 reverted in prose, v6 50 us (mega milestone, final)."""
    t = Trace(path)
    t.setup(hardware=hardware)
    t.legacy_keep(0, 100.0, "baseline softmax with three passes over each row")
    t.legacy_keep(
        1,
        80.0,
        "merge the max and sum loops with an online rescale of the running sum",
        pct="+20.0%",
        open_directions=[{"direction": "keep short rows in registers", "rationale": "one read"}],
    )
    t.legacy_revert(
        2,
        95.0,
        "slower",
        [SPILL_DEADEND, SMEM_DEADEND],
        next_direction="try vectorized loads",
    )
    t.legacy_keep(
        3,
        60.0,
        "vectorized 128-bit loads along the row",
        pct="+25.0%",
        memory_later=True,
        pitfalls=[
            {
                "pitfall": "vector width 8 on odd column counts",
                "explanation": "misaligned tail on sm_90 because cols % 8 != 0 breaks the "
                "128-bit load alignment, so the tail lanes read past the row",
                "fix": "scalar epilogue for the remainder columns",
            },
            "a bare string pitfall",
            None,
            {"error_type": "compilation", "error_message": "bad", "lesson": "x"},
        ],
    )
    t.legacy_keep(4, 59.9, "retuned num_warps from 4 to 8", pct="+0.2%")
    t.legacy_revert(
        5,
        61.0,
        "regressed",
        body="Persistent grid with one program per SM was slower on sm_90 because the "
        "row loop serializes the tail wave and occupancy drops to one block per SM.",
    )
    t.legacy_keep(6, 50.0, "two rows per program with num_warps 8", pct="+16.7%")
    return t.write(bare=bare)


def long_horizon_trace(path: Path, hardware: str | None = "NVIDIA B200", bare: bool = False):
    """A long-horizon trace: V0 (two commits) 200 us, V1 (two commits) 100 us, episode 1
    promotes v2 at 80 us, episode 2 ends pivot (v3 carries v2 forward, one rejected experiment
    with a mechanism), episode 3 promotes v4 at 70 us, episode 4 ends blocked (v5)."""
    t = Trace(path)
    t.setup(hardware=hardware)
    t.v0_two_commit(200.0)
    t.v1_two_commit(100.0)
    t.promote(
        1,
        2,
        80.0,
        20.0,
        "two warps per row with partial sums kept in registers until the final shuffle",
    )
    t.non_promotion(
        3,
        2,
        "pivot",
        "v2",
        80.0,
        experiments=[TMA_EXPERIMENT],
    )
    t.promote(
        3,
        4,
        70.0,
        12.5,
        "cache the row maximum in shared memory across the two passes",
    )
    t.non_promotion(5, 4, "blocked", "v4", 70.0, failure_reason="sandbox unavailable")
    return t.write(bare=bare)


def kernel_only_trace(path: Path) -> Path:
    """A trace with only ``.git`` and ``kernel.py`` (one commit, no memory, no metadata)."""
    t = Trace(path)
    t.commit("initial kernel", {"kernel.py": kernel_source(0)})
    return t.write()
