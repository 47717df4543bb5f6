"""Setting a run up: every check that can refuse it happens here, before anything runs.

``prepare(config)`` reads and checks the bundle, settles the budget (explicit
flags beat budget.json, which beats the defaults), loads the provider (an agent
executable that is not there is refused now, not per candidate), snapshots the
kernel's repository, creates the output folder and freezes the bundle into it.
Any refusal raises GitkbError (exit 1) and leaves no output folder behind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitkb import targets
from gitkb.errors import GitkbError, writing
from gitkb.optimize import bundle as bundle_mod
from gitkb.optimize import commit, profilers, providers
from gitkb.optimize import freeze as freeze_mod
from gitkb.optimize.providers import warmstart
from gitkb.optimize.trace_writer import TraceWriter
from gitkb.util import log
from gitkb.util.resources import data_dir

if TYPE_CHECKING:
    from gitkb.optimize.commit import CommitPlan, CommitResult
    from gitkb.store import Store

REFERENCE_KERNEL_VARIABLE = "TLX_REFERENCE_KERNEL_PATH"
live_log = log.logger(log.LIVE_LOGGER)


def live_line(line: str) -> None:
    """The default progress: the line goes to the live-lines logger (the CLI prints it)."""
    live_log.info("%s", line)


@dataclass
class RunConfig:
    bundle: Path | None = None  # the BUNDLE folder; the explicit files below take precedence
    output: Path | None = None
    kernel: Path | None = None  # None: the bundle's own kernel.py, never committed
    harness: Path | None = None
    cases: Path | None = None
    target: Path | None = None
    budget_file: Path | None = None  # --budget
    reference_kernel: Path | None = None
    arch: str | None = None  # --arch: the architecture the run is for
    profile: bool = True  # --profile/--no-profile: send the harness profile requests
    provider: str = "knobs"
    provider_options: providers.ProviderOptions = field(default_factory=providers.ProviderOptions)
    budget_flags: dict = field(default_factory=dict)  # flags the user gave explicitly
    commit_winner: bool = True
    vcs: str = "auto"
    commit_message: str | None = None
    warm_start: str = "off"  # on | reference | off (docs/warm-start.md, "The adopting run")
    kb: str | None = None  # the knowledge base: warm start reads it, write-back mines into it
    bundle_roots: list[Path] = field(default_factory=list)  # --bundle-root: kernel-only form
    harness_mode: str = "subprocess"  # TLX's flag: gitkb always isolates, as TLX's CLI does
    diagnostic_proton_intra_kernel: bool = False  # baseline and winner: a per-warp trace too
    progress: Callable[[str], None] = live_line


@dataclass(frozen=True)
class RunSetup:
    """A run's fixed setup, settled by ``prepare`` before anything runs: what every step
    reads and none changes (what changes is ``state.RunState``)."""

    config: RunConfig
    bundle: bundle_mod.Bundle  # read from the frozen copy
    frozen: freeze_mod.Frozen
    kernel: Path
    kernel_guard: freeze_mod.KernelGuard
    baseline_source: str
    budget: bundle_mod.Budget
    budget_sources: dict[str, str]
    provider: providers.Provider
    output: Path
    profiler: dict
    trace: TraceWriter  # the run's trace (one writer; it keeps its own head)
    trace_label: str
    operator: str
    plan: CommitPlan | None = None  # the winner commit's snapshot; None: no commit
    commit_skipped: str | None = None  # why no commit was planned
    warm: warmstart.Provider | None = None  # --warm-start on|reference
    kb: Store | None = None  # the store warm start reads, feedback and write-back go to
    started: float = field(default_factory=time.monotonic)

    def say(self, line: str) -> None:
        self.config.progress(line)

    @property
    def environment(self) -> dict[str, str]:
        """What every harness process gets on top of gitkb's own environment."""
        env = self.bundle.environment
        if self.bundle.reference_kernel is not None:
            env[REFERENCE_KERNEL_VARIABLE] = str(self.bundle.reference_kernel.resolve())
        return env

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def hardware_tokens(target: dict) -> list[str]:
    """The target's hardware as trace tokens: the first of device, architecture, backend
    that the token table knows; else the raw device text (mining will say it is unknown)."""
    for key in ("device", "architecture", "backend"):
        text = target.get(key)
        found = targets.lookup(text) if isinstance(text, str) else None
        if found is not None:
            return [found.token]
    raw = target.get("device") or target.get("architecture") or target["backend"]
    return [raw]


def trace_label(bundle_name: str, baseline_source: str) -> str:
    """The run's trace label: written into the trace (``solution.json``), named in the winner
    commit's ``KB-Trace`` trailer, and the label mining files the trace under. Unique per
    run: a digest of the bundle, the baseline and the run's start time."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", bundle_name).strip(".-") or "bundle"
    digest = hashlib.sha256(
        f"{bundle_name}\0{time.time_ns()}\0{baseline_source}".encode()
    ).hexdigest()
    return f"gitkb-optimize-{name}-{digest[:12]}"


def _check_arch(arch: str | None, target: dict, where: Path) -> dict:
    """``--arch`` names the architecture the run is for: it fills in a target.json without
    one, and must agree with one that has it (same hardware token)."""
    if not arch:
        return target

    declared = target.get("architecture")
    if not declared:
        return dict(target, architecture=arch)
    mine, theirs = targets.lookup(arch), targets.lookup(declared)
    same = arch.lower() == declared.lower() or (
        mine is not None and theirs is not None and mine.token == theirs.token
    )
    if not same:
        raise GitkbError(
            f"--arch {arch} does not match the target's architecture {declared!r} ({where})"
        )
    return target


def _read_kernel(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GitkbError(f"kernel file unreadable: {exc} ({path})") from None


def default_output(files: bundle_mod.Sources) -> Path:
    """``optimize-out/<bundle>-<n>``: the first that does not exist yet."""
    base = Path("optimize-out") / files.folder.resolve().name
    n = 1
    while Path(f"{base}-{n}").exists():
        n += 1
    return Path(f"{base}-{n}")


class CommitRefused(GitkbError):
    """The winner could never be committed (the kernel is in no repository, untracked ...):
    refused before anything runs, with the TLX agent's exit 3 and a failed ``auto_commit``."""

    def __init__(self, result: CommitResult) -> None:
        super().__init__(result.diagnostics)
        self.result = result


def _bundle_folder(config: RunConfig) -> Path | None:
    """BUNDLE, else for ``--kernel`` without every bundle file the folder found by the TLX
    convention (``<arch>/targets/<kernel stem>/`` under ``--bundle-root`` or gitkb's own
    ``targets/``)."""
    if config.bundle is not None or config.kernel is None:
        return config.bundle
    if config.harness and config.cases and config.target:
        return None

    roots = [Path(r) for r in config.bundle_roots] + [data_dir("targets")]
    found = bundle_mod.find_by_convention(Path(config.kernel), config.arch, roots)
    if found is None:
        where = ", ".join(str(r) for r in roots)
        raise GitkbError(
            f"no bundle for {Path(config.kernel).name}: pass BUNDLE or --harness, --cases, "
            f"--target, or keep it at <arch>/targets/{Path(config.kernel).stem}/ under {where}"
        )
    return found


def _plan_commit(config: RunConfig, kernel: Path) -> CommitPlan:
    """The winner commit's snapshot; a refusal is final now (exit 3, TLX's order)."""
    try:
        return commit.prepare(kernel, config.vcs)
    except GitkbError as exc:
        subject = config.commit_message or f"Optimize {kernel.name} with TLX agent"
        raise CommitRefused(commit.refused(kernel, subject, exc.message)) from None


def prepare(config: RunConfig) -> RunSetup:
    """Check everything and set the run up; see the module docstring."""
    if config.warm_start not in warmstart.MODES:
        raise GitkbError(f"--warm-start must be one of {', '.join(warmstart.MODES)}")
    if config.provider == "warm-start":
        raise GitkbError(
            "warm-start is not a round provider: use --warm-start on --kb STORE (--provider)"
        )
    if config.harness_mode != "subprocess":
        config.progress(
            f"warning: --harness-mode {config.harness_mode} is only available via the Python "
            "API (StandaloneHarness); CLI still uses subprocess isolation."
        )
    files = bundle_mod.sources(
        _bundle_folder(config),
        config.harness,
        config.cases,
        config.target,
        config.budget_file,
        config.reference_kernel,
    )
    checked = bundle_mod.load(files)
    _check_arch(config.arch, checked.target, files.target)
    kernel = config.kernel or files.kernel
    if kernel is None:
        raise GitkbError(
            f"no kernel: pass --kernel FILE (the bundle has no kernel.py) ({files.folder})"
        )
    kernel = Path(kernel).absolute()
    baseline_source = _read_kernel(kernel)
    budget, budget_sources = bundle_mod.Budget.effective(
        config.budget_flags, checked.budget_file, files.budget_given
    )

    warm: warmstart.Provider | None = None
    kb: Store | None = None
    if config.warm_start != "off":
        options = dataclasses.replace(config.provider_options, kb=config.kb)
        warm = warmstart.Provider(options, checked.tunables)
        kb = warm.store
    elif config.kb:
        kb, unreadable = warmstart.open_kb(config.kb)
        if kb is None:  # without a warm start, --kb is only where the win is written back
            raise GitkbError(f"--kb: {unreadable}")
    if kb is not None:  # the run writes into it (attestations, feedback, the write-back)
        kb.require_signing()
    plan: CommitPlan | None = None
    commit_skipped: str | None = None
    if config.commit_winner:
        if config.kernel is None:
            commit_skipped = (
                "the kernel is the bundle's own kernel.py (the bundle is never written); "
                "pass --kernel FILE to commit the winner into that file's repository"
            )
        else:
            plan = _plan_commit(config, kernel)
    provider = providers.load(config.provider, config.provider_options, checked.tunables)

    # Absolute from here on: agents (codex --cd) and harnesses run in other folders.
    output = (Path(config.output) if config.output else default_output(files)).resolve()
    if output.exists() and any(output.iterdir()):
        raise GitkbError(f"output folder is not empty ({output})")
    copies = freeze_mod.collect(files, exclude=(output,))
    with writing(output):
        output.mkdir(parents=True, exist_ok=True)
        frozen = freeze_mod.freeze(copies, output / "bundle", files.folder)
        if files.reference_kernel is not None:  # TLX keeps the oracle at the folder's root
            (output / bundle_mod.NAMES["reference_kernel"]).write_bytes(
                files.reference_kernel.read_bytes()
            )
    frozen_bundle = bundle_mod.load(frozen.sources(files.reference_kernel is not None))
    frozen_bundle = dataclasses.replace(
        frozen_bundle, target=_check_arch(config.arch, frozen_bundle.target, files.target)
    )
    operator = frozen_bundle.target.get("operator") or checked.name
    setup = RunSetup(
        config=config,
        bundle=frozen_bundle,
        frozen=frozen,
        kernel=kernel,
        kernel_guard=freeze_mod.KernelGuard(kernel, baseline_source.encode("utf-8")),
        baseline_source=baseline_source,
        budget=budget,
        budget_sources=budget_sources,
        provider=provider,
        output=output,
        profiler=profilers.profiler_mapping(frozen_bundle.backend),
        trace=TraceWriter(output / "trace"),
        trace_label=trace_label(checked.name, baseline_source),
        operator=operator,
        plan=plan,
        commit_skipped=commit_skipped,
        warm=warm,
        kb=kb,
    )
    setup.say(f"[gitkb] bundle frozen: {frozen.path.resolve()} ({len(frozen.files)} files)")
    for rel, digest in frozen.files.items():
        setup.say(f"[gitkb] bundle sha256 {digest} {rel}")
    budget_text = ", ".join(f"{k}={v} ({budget_sources[k]})" for k, v in vars(budget).items())
    setup.say(f"[gitkb] budget: {budget_text}")
    return setup
