from collections.abc import Callable
from pathlib import Path

import click
from click.decorators import FC

from gitkb.optimize import loop, providers
from gitkb.optimize.bundle import Budget
from gitkb.optimize.providers.warmstart import MODES as WARM_START_MODES


class _UsageExitsOne(click.Command):
    """Usage errors exit 1 here, like every other setup error: 2 means "no winner"."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            exc.exit_code = 1  # type: ignore[misc]  # click declares it on the class only
            raise


def _budget_option(name: str, kind: click.ParamType, help_text: str) -> Callable[[FC], FC]:
    default = getattr(Budget, name)
    return click.option(
        f"--{name.replace('_', '-')}",
        name,
        type=kind,
        default=None,
        help=f"{help_text} A --budget file overrides it; it overrides BUNDLE's budget.json. "
        f"[default: {default}]",
    )


def _file(flag: str, help_text: str) -> Callable[[FC], FC]:
    return click.option(flag, type=click.Path(dir_okay=False), help=help_text)


@click.command("optimize", cls=_UsageExitsOne)
@click.argument("bundle", type=click.Path(file_okay=False), required=False)
@_file("--kernel", "The kernel file to optimize and commit the winner into "
       "(default: the bundle's kernel.py, never committed).")  # fmt: skip
@_file("--harness", "harness.py (default: BUNDLE's).")
@_file("--cases", "cases.json (default: BUNDLE's).")
@_file("--target", "target.json (default: BUNDLE's).")
@_file("--budget", "A budget JSON file whose keys override the flags (TLX's rule; default: "
       "BUNDLE's budget.json, which the flags override).")  # fmt: skip
@_file("--reference-kernel", "A trusted correctness oracle, frozen with the bundle; harness "
       "processes find it at $TLX_REFERENCE_KERNEL_PATH.")  # fmt: skip
@click.option(
    "-o",
    "--output",
    "--output-dir",
    "output",
    type=click.Path(file_okay=False),
    help="A fresh artifact folder (default: ./optimize-out/<bundle>-<n>).",
)
@click.option(
    "--arch",
    help="The architecture the run is for; must match target.json's. With --kernel alone "
    "it picks the bundle <arch>/targets/<kernel stem>/ (the TLX layout).",
)
@click.option(
    "--bundle-root",
    "bundle_roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Kernel-only form: a folder holding <arch>/targets/<kernel stem>/ bundles (TLX's "
    "harnesses/); searched before gitkb's own targets/. Repeatable.",
)
@click.option(
    "--provider",
    default="knobs",
    show_default=True,
    help="Where candidates come from: knobs, mock, command, codex, claude, replay.",
)
@click.option(
    "--harness-mode",
    type=click.Choice(["subprocess", "standalone"]),
    default="subprocess",
    show_default=True,
    help="TLX's flag, kept for its command lines: evaluations always run in a contained "
    "subprocess (standalone only warns, as the TLX CLI does).",
)
@click.option(
    "--diagnostic-proton-intra-kernel",
    is_flag=True,
    help="Also collect TLX's diagnostic-only per-warp Proton trace request for the baseline "
    "and the final winner (never measured, never promoted).",
)
@click.option("--model", help="codex/claude/command providers: the model the agent uses.")
@click.option("--agent-command", help="command provider: the agent's command line.")
@click.option("--agent-bin", help="codex/claude providers: the executable to run.")
@click.option(
    "--agent-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=1800.0,
    show_default=True,
    help="Seconds one agent proposal may take.",
)
@click.option(
    "--replay-dir",
    type=click.Path(file_okay=False),
    help="replay provider: the folder of candidate files.",
)
@_budget_option("max_rounds", click.IntRange(min=1), "Rounds of candidates.")
@_budget_option("candidates_per_round", click.IntRange(min=1), "Candidates per round.")
@_budget_option(
    "max_candidate_seconds",
    click.FloatRange(min=0, min_open=True),
    "Timeout of one harness evaluation.",
)
@_budget_option(
    "max_total_seconds", click.FloatRange(min=0, min_open=True), "Wall-clock budget of the run."
)
@_budget_option("min_speedup", click.FloatRange(min=1), "Aggregate speedup a promotion needs.")
@_budget_option("max_cv", click.FloatRange(min=0), "Largest timing CV a promotion accepts.")
@_budget_option("benchmark_repetitions", click.IntRange(min=1), "Timing samples per case.")
@click.option(
    "--profile/--no-profile",
    default=True,
    show_default=True,
    help="Send the harness's profile() summary and deep requests (TLX's --profile).",
)
@click.option(
    "--commit-winner/--no-commit-winner",
    default=True,
    show_default=True,
    help="Commit the winner into the kernel file's repository.",
)
@click.option(
    "--vcs",
    type=click.Choice(["auto", "git", "hg"]),
    default="auto",
    show_default=True,
    help="The kernel repository's kind.",
)
@click.option("--commit-message", help="Subject of the winner commit.")
@click.option(
    "--warm-start",
    type=click.Choice(WARM_START_MODES),
    default="off",
    show_default=True,
    help="Seed the run from a knowledge base (needs --kb): on adopts the best verified "
    "candidate, reference only mirrors its prose, off is a cold start.",
)
@click.option(
    "--kb",
    "kb",
    type=click.Path(file_okay=False),
    help="The knowledge base (a gitkb store): warm start reads it and attests outcomes; "
    "after a win the run's trace is mined into it (write-back).",
)
@click.pass_context
def command(
    ctx: click.Context,
    bundle: str | None,
    kernel: str | None,
    harness: str | None,
    cases: str | None,
    target: str | None,
    budget: str | None,
    reference_kernel: str | None,
    output: str | None,
    arch: str | None,
    bundle_roots: tuple[str, ...],
    provider: str,
    harness_mode: str,
    diagnostic_proton_intra_kernel: bool,
    model: str | None,
    agent_command: str | None,
    agent_bin: str | None,
    agent_timeout: float,
    replay_dir: str | None,
    profile: bool,
    commit_winner: bool,
    vcs: str,
    commit_message: str | None,
    warm_start: str,
    kb: str | None,
    **budget_flags: float | None,
) -> None:
    """Optimize a kernel with the harness and cases of BUNDLE (or --harness, --cases,
    --target); print the result as JSON.

    The bundle is copied into the output folder, frozen and hashed; every evaluation
    runs from that copy, in a contained subprocess. The reviewer's log goes to stderr.
    Exit codes: 0 a winner (committed unless --no-commit-winner), 2 no winner, 3 a
    winner whose commit failed (artifacts kept), 1 a usage or setup error, or a run
    stopped because the frozen bundle changed. The TLX agent's command line runs as it
    is (--kernel alone with --arch finds the bundle by TLX's convention); --budget FILE
    overrides the flags, which override BUNDLE's budget.json.
    """

    def path(value: str | None) -> Path | None:
        return Path(value) if value else None

    config = loop.RunConfig(
        bundle=path(bundle),
        output=path(output),
        kernel=path(kernel),
        harness=path(harness),
        cases=path(cases),
        target=path(target),
        budget_file=path(budget),
        reference_kernel=path(reference_kernel),
        arch=arch,
        profile=profile,
        provider=provider,
        provider_options=providers.ProviderOptions(
            agent_command=agent_command,
            agent_bin=agent_bin,
            replay_dir=replay_dir,
            agent_timeout_s=agent_timeout,
            model=model,
        ),
        budget_flags={k: v for k, v in budget_flags.items() if v is not None},
        commit_winner=commit_winner,
        vcs=vcs,
        commit_message=commit_message,
        warm_start=warm_start,
        kb=kb,
        bundle_roots=[Path(r) for r in bundle_roots],
        harness_mode=harness_mode,
        diagnostic_proton_intra_kernel=diagnostic_proton_intra_kernel,
    )
    result = loop.run(config)
    click.echo(loop.result_json(result.document))
    ctx.exit(result.exit_code)
