import click

from gitkb.commands import echo_json
from gitkb.gates.registry import by_name, checked_names
from gitkb.store import Store
from gitkb.store import validation as validate
from gitkb.testing.injections import injection_outcomes

FINDINGS_SHOWN_PER_GATE = 12


@click.command("validate")
@click.argument("path", default=".", type=click.Path(file_okay=False))
@click.option(
    "--full", is_flag=True, help="Also run the gates that need the whole store (relations)."
)
@click.option("--gate", "gate_names", multiple=True, help="Run only this gate (repeatable).")
@click.option(
    "--staging",
    type=click.Path(exists=True, file_okay=False),
    help="Validate this folder against the store at PATH.",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(exists=True, file_okay=False),
    help="The trace the records in PATH (a folder) were mined from: the trace gates judge "
    "them against it.",
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(exists=True, file_okay=False),
    help="A store holding the traces of the records in PATH (a folder) under "
    "refs/kb/traces/, and the ids store-overlap checks.",
)
@click.option(
    "--injection-tests",
    is_flag=True,
    help="Run every gate's injection cases on the shipped sample.",
)
@click.option(
    "--history",
    is_flag=True,
    help="Replay the store's history rules over every commit of main; list each offending one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def command(
    path: str,
    full: bool,
    gate_names: tuple[str, ...],
    staging: str | None,
    trace_path: str | None,
    store_path: str | None,
    injection_tests: bool,
    history: bool,
    as_json: bool,
) -> None:
    """Run the gates on PATH: a store (its main), or a folder holding records/.

    Prints one line per gate (PASS, FAIL or SKIP), then each finding as
    `record-id: gate: field: what is wrong`. Exits 1 when any gate fails, or when a
    folder's mined records could not meet their trace (give --trace or --store).
    """
    if history:
        _history(path, as_json)
    names = checked_names(gate_names)
    if injection_tests:
        outcomes = injection_outcomes(by_name(names))
        problems = [o for o in outcomes if not o.ok and o.status != "SKIP"]
        if as_json:
            echo_json([o.__dict__ for o in outcomes])
        else:
            for o in outcomes:
                click.echo(
                    f"{o.status:6} {o.gate:20} {o.case}"
                    + (f"  ({o.detail})" if o.detail and not o.ok else "")
                )
            fired = sum(o.status == "FIRED" for o in outcomes)
            click.echo(f"{fired} cases fired, {len(problems)} problems")
        raise SystemExit(1 if problems else 0)

    done = validate.validate(path, names, staging, full, trace=trace_path, store=store_path)
    results = done.results
    failed = [r for r in results if r.status == "FAIL"]
    unrun = validate.could_not_run(results)
    if as_json:
        echo_json(
            {
                "records": done.records,
                "gates": [
                    {
                        "gate": r.gate.name,
                        "status": r.status,
                        "reason": r.reason,
                        "findings": [f.as_json() for f in r.findings],
                    }
                    for r in results
                ],
                "failed": len(failed),
                "could_not_run": unrun,
            }
        )
    else:
        click.echo(done.census)
        for result in results:
            click.echo(result.line())
        for result in failed:
            for finding in result.findings[:FINDINGS_SHOWN_PER_GATE]:
                click.echo(f"  {finding.line()}")
            hidden = len(result.findings) - FINDINGS_SHOWN_PER_GATE
            if hidden > 0:
                click.echo(f"  ... {hidden} more {result.gate.name} findings (use --json for all)")
        click.echo(f"{len(failed)} of {len(results)} gates failed")
        if unrun:
            click.echo(
                f"{len(unrun)} trace gates could not run on mined records: {', '.join(unrun)}; "
                "pass --trace PATH (the trace they were mined from) or --store STORE"
            )
    raise SystemExit(1 if failed or unrun else 0)


def _history(path: str, as_json: bool) -> None:
    """Each commit of main that breaks a history rule, oldest first, with its findings."""
    from gitkb.server.receive import history_findings

    store = Store.open(path)
    found = history_findings(store.repo, store.tip)
    commits: dict[str, list] = {}
    for sha, finding in found:
        commits.setdefault(sha, []).append(finding)
    if as_json:
        echo_json([{"commit": sha, "findings": [f.as_json() for f in fs]}
                   for sha, fs in commits.items()])  # fmt: skip
    else:
        for sha, findings in commits.items():
            for finding in findings:
                click.echo(f"{sha[:12]} {finding.line()}")
        click.echo(f"{len(commits)} commits break the history rules")
    raise SystemExit(1 if commits else 0)
