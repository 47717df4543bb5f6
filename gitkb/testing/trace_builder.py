"""Build real trace repositories shaped like an optimizer's campaign workspace.

A ``Trace`` records commits in memory and writes them all with one ``git fast-import``
(``gitkb.vcs.fast_import``), so a 1,000-version trace takes a fraction of a second. Files
are given as text, bytes, JSON-able dicts/lists, ``Symlink(target)`` or None (delete).
Helpers cover both producer paths of docs/trace-format.md:

* legacy: ``legacy_keep`` (``v<N>: committed (+X%)``), ``legacy_revert``
  (``v<N>: reverted (...) — dead-end recorded: a, b``), optional follow-up
  memory commits;
* long-horizon: ``v0_two_commit`` / ``v1_two_commit`` (code commit, then a
  metadata-only commit), ``promote`` (``episode <E>: promote ...`` with
  ``memory/long_horizon_e<EEEE>.json`` and its journal), ``non_promotion``
  (metadata-only ``v<N>: long-horizon episode <E> <status>`` carrying the
  incumbent forward);
* the Atrex producer's own shapes: ``sol_seed``, ``framework_v1``, ``episode_branch``,
  ``rejected_candidate``, ``profile``.

Ready-made traces are in ``gitkb.testing.traces``; the shipped example trace in
``gitkb.testing.trace``.

    t = Trace(tmp_path / "kernel_opt_001_softmax")
    t.setup(hardware="NVIDIA H100")
    t.legacy_keep(0, 100.0, "baseline softmax, three passes over each row")
    t.legacy_keep(1, 80.0, "merge the max and sum loops with an online rescale")
    path = t.write()
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitkb.testing.trace_files import (
    AUTHOR,
    LONG_HORIZON_AUTHOR,
    START_TIME,
    Symlink,
    file_bytes,
    kernel_source,
    memory,
    memory_experience,
    sol_manifest,
)
from gitkb.vcs.fast_import import ImportedCommit, ImportedFile, import_commits


def _entry(value: object) -> ImportedFile | None:
    if value is None:
        return None
    if isinstance(value, Symlink):
        return ImportedFile(value.target.encode(), link=True)
    return ImportedFile(file_bytes(value))


@dataclass
class Trace:
    """A trace repository under construction; ``write()`` makes it real."""

    path: Path
    author: str = AUTHOR  # each commit's author and committer unless it names another
    clock: int = START_TIME  # the last commit's time; each commit comes a minute later
    commits: list[ImportedCommit] = field(default_factory=list)
    worktree_files: dict = field(default_factory=dict)
    ids: dict[int, str] = field(default_factory=dict)  # commit ids by mark, once written
    kernel: str = ""  # the kernel.py at the head of main, as the helpers last wrote it
    _marks: int = 0

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    # ----------------------------------------------------------------- primitives

    def commit(
        self,
        subject: str,
        files: dict | None = None,
        body: str = "",
        author: str | None = None,
        ref: str = "refs/heads/main",
        parent: int | None = None,
    ) -> int:
        """Record one commit on ``ref`` (a minute after the last); returns its mark (usable as
        ``parent`` of a branch). ``files``: path -> text, bytes, a JSON-able value, a
        ``Symlink``, or None to delete."""
        self._marks += 1
        self.clock += 60
        message = (subject + ("\n\n" + body if body else "") + "\n").encode()
        entries = {path: _entry(value) for path, value in (files or {}).items()}
        self.commits.append(
            ImportedCommit(
                ref, self._marks, message, entries, author or self.author, self.clock, parent
            )
        )
        if ref == "refs/heads/main" and "kernel.py" in (files or {}):
            value = (files or {})["kernel.py"]
            self.kernel = value if isinstance(value, str) else ""
        return self._marks

    def worktree(self, path: str, content: object) -> None:
        """A file left in the work tree and never committed (git-excluded profiles, attempts)."""
        self.worktree_files[path] = content

    def write(self, bare: bool = False) -> Path:
        """Create the repository (one ``git fast-import``), the work tree's uncommitted files
        too, and return its path; ``ids`` then holds each commit's id by its mark."""
        self.ids = import_commits(self.path, self.commits, bare=bare)
        for path, value in self.worktree_files.items():
            target = self.path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(file_bytes(value))
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
        **memory_fields: Any,
    ) -> int:
        """``v<N>: committed (+X%)``: kernel.py changes; memory in the same commit, or in a
        follow-up ``v<N>: record memory`` commit when ``memory_later``."""
        subject = f"v{n}: committed ({pct or '+0.0%'})" if n else "v0: baseline"
        doc = memory(f"v{n}", geomean, description=description, **memory_fields)
        files: dict[str, object] = {
            "kernel.py": kernel if kernel is not None else kernel_source(n, dsl)
        }
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
        **memory_fields: Any,
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

    def v0_two_commit(self, geomean: float, **memory_fields: Any) -> int:
        """``V0: baseline kernel`` (code) then ``V0: record baseline measurement`` (memory)."""
        self.commit("V0: baseline kernel", {"kernel.py": kernel_source(0, "any")})
        memory_fields.setdefault("category", "baseline")
        doc = memory("v0", geomean, description="PyTorch reference baseline", **memory_fields)
        return self.commit(
            "V0: record baseline measurement",
            {"memory/v0.json": doc, "baseline_report.md": "baseline\n"},
            author=LONG_HORIZON_AUTHOR,
        )

    def v1_two_commit(
        self,
        geomean: float,
        framework: str = "triton",
        kernel: str | None = None,
        **memory_fields: Any,
    ) -> int:
        """V1 C1 (kernel + solution) then the C2 pin (framework_baseline.json + memory);
        ``kernel``: its kernel.py, else a generated one."""
        self.commit(
            f"v1: framework baseline ({framework}) replacing the V0 PyTorch wrapper",
            {"kernel.py": kernel if kernel is not None else kernel_source(1, "triton")},
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
        kernel: str | None = None,
        **memory_fields: Any,
    ) -> int:
        """``episode <E>: promote verified long-horizon candidate``: squash of kernel.py plus
        ``memory/long_horizon_e<EEEE>.json`` (attempt + journal) and ``memory/v<N>.json``;
        ``kernel``: the promoted kernel.py, else a generated one."""
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
            "kernel.py": kernel
            if kernel is not None
            else kernel_source(n, "triton", note=description[:60]),
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

    def sol_seed(
        self,
        geomean: float,
        hardware: list | None = None,
        name: str = "softmax",
        description: str = "Row-wise softmax over the last axis of a 2-D bf16 tensor",
    ) -> int:
        """``reference/sol_seed.py``: one ``V0: baseline (SOL reference wrapper)`` commit with
        the operator files (``definition.json``: ``name``, ``description``), the V0 kernel and
        the SOL manifest (``target_hardware`` B200 and LOCAL), then ``V0: record baseline
        measurement`` (memory and baseline report)."""
        source = self.commit(
            "V0: baseline (SOL reference wrapper)",
            {
                "definition.json": {
                    "name": name,
                    "description": description,
                    "axes": {"cols": {"type": "const", "value": 4096}, "rows": {"type": "var"}},
                },
                "workload.jsonl": "".join(
                    json.dumps({"uuid": f"{i:08d}-aaaa-bbbb", "rows": 2**i}) + "\n"
                    for i in range(3)
                ),
                "solution.json": sol_manifest(name, hardware or ["B200", "LOCAL"]),
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

    def framework_v1(
        self,
        geomean: float,
        framework: str = "triton",
        arch: str = "sm_100",
        kernel: str | None = None,
    ) -> int:
        """``_commit_framework_baseline``: C1 holds only the kernel (``kernel``, else a
        generated one) and the native manifest (no ``target_hardware``), C2 pins it
        (``framework_baseline.json`` and memory)."""
        self.commit(
            f"v1: framework baseline ({framework}) replacing the V0 PyTorch wrapper",
            {
                "kernel.py": kernel if kernel is not None else kernel_source(1, "triton"),
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
