import click


def _budget_option(name: str, kind, help_text: str):
    return click.option(
        f"--{name.replace('_', '-')}", name, type=kind, default=None, help=help_text
    )


@click.command("optimize")
@click.argument("bundle", type=click.Path(file_okay=False))
@click.option(
    "--kernel",
    type=click.Path(dir_okay=False),
    help="The kernel file to optimize and commit the winner into "
    "(default: the bundle's kernel.py, never committed).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False),
    help="A fresh artifact folder (default: ./optimize-out/<bundle>-<n>).",
)
@click.option(
    "--provider",
    default="knobs",
    show_default=True,
    help="Where candidates come from: knobs, command, codex, claude, replay.",
)
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
@_budget_option(
    "min_speedup", click.FloatRange(min=0, min_open=True), "Aggregate speedup a promotion needs."
)
@_budget_option("max_cv", click.FloatRange(min=0), "Largest timing CV a promotion accepts.")
@_budget_option("benchmark_repetitions", click.IntRange(min=1), "Timing samples per case.")
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
    type=click.Choice(["on", "reference", "off"]),
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
    ctx,
    bundle,
    kernel,
    output,
    provider,
    agent_command,
    agent_bin,
    agent_timeout,
    replay_dir,
    commit_winner,
    vcs,
    commit_message,
    warm_start,
    kb,
    **budget,
) -> None:
    """Optimize a kernel with the harness and cases of BUNDLE; print the result as JSON.

    Progress lines go to stderr. Exit codes: 0 a winner (committed unless
    --no-commit-winner), 2 no winner, 3 a winner whose commit failed (artifacts
    kept), 1 a usage or setup error. budget.json keys override the flags.
    """
    from pathlib import Path

    from gitkb.optimize import loop, providers

    if output is None:
        base = Path("optimize-out") / Path(bundle).resolve().name
        n = 1
        while Path(f"{base}-{n}").exists():
            n += 1
        output = f"{base}-{n}"
    config = loop.RunConfig(
        bundle=Path(bundle),
        output=Path(output),
        kernel=Path(kernel) if kernel else None,
        provider=provider,
        provider_options=providers.ProviderOptions(
            agent_command=agent_command,
            agent_bin=agent_bin,
            replay_dir=replay_dir,
            agent_timeout_s=agent_timeout,
        ),
        budget_flags={k: v for k, v in budget.items() if v is not None},
        commit_winner=commit_winner,
        vcs=vcs,
        commit_message=commit_message,
        warm_start=warm_start,
        kb=kb,
    )
    result = loop.run(config)
    click.echo(loop.result_json(result.document))
    ctx.exit(result.exit_code)
