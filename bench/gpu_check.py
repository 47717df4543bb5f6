"""The Python half of bench/gpu_check.sh: bundle and device checks, per-step verdicts, the table.

The shell script runs the steps (install, optimize, mine, validate, warm start);
this file reads what they wrote (result.json, the mine and validate JSON) and
says whether each step did what it must, in one line, exiting 1 when not.

    python bench/gpu_check.py bundle BUNDLE
    python bench/gpu_check.py toolchain [--dry-run]
    python bench/gpu_check.py compile BUNDLE
    python bench/gpu_check.py device BUNDLE --out device.json [--dry-run]
    python bench/gpu_check.py rehearsal-bundle SOURCE DEST
    python bench/gpu_check.py expect optimize RESULT --repo KERNEL_REPO
    python bench/gpu_check.py expect mine MINE_JSON
    python bench/gpu_check.py expect validate VALIDATE_JSON
    python bench/gpu_check.py expect warm-start RESULT
    python bench/gpu_check.py table --device D --run-1 R1 --run-2 R2 --mine M --validate V
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

EXIT_FAILED, EXIT_NO_GPU = 1, 3
SM90_MAX_SHARED_BYTES = 232448  # 227 KiB: the most shared memory one sm_90 block may use
# The rehearsal's budget: enough candidates to promote, mine and warm-start, and quick.
REHEARSAL_BUDGET = {
    "max_rounds": 1,
    "candidates_per_round": 2,
    "max_candidate_seconds": 120,
    "max_total_seconds": 120,
    "min_speedup": 1.02,
    "max_cv": 10.0,
    "benchmark_repetitions": 5,
}


class CheckFailed(Exception):
    """One line saying what a step did not do."""


def read_json(path: str | Path, what: str):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckFailed(f"{what}: {path} was not written") from None
    except (OSError, ValueError) as exc:
        raise CheckFailed(f"{what}: {path} is not readable JSON ({exc})") from None


def dig(document, *keys, default=None):
    """document[k1][k2]...; ``default`` where any level is missing or not a mapping/list."""
    for key in keys:
        try:
            document = document[key]
        except (KeyError, IndexError, TypeError):
            return default
    return default if document is None else document


def load_harness(bundle: Path):
    sys.dont_write_bytecode = True  # no __pycache__ inside the bundle folder
    spec = importlib.util.spec_from_file_location("gpu_check_harness", bundle / "harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- bundle and device


def check_bundle(path: Path) -> list[str]:
    """What gitkb and the harness make of the bundle without a GPU; raises CheckFailed."""
    from gitkb.errors import GitkbError
    from gitkb.optimize import bundle as bundle_mod
    from gitkb.optimize import providers
    from gitkb.optimize.profilers import profiler_mapping
    from gitkb.optimize.providers import knobs
    from gitkb.optimize.setup import hardware_tokens

    try:
        bundle = bundle_mod.load(bundle_mod.sources(path))
    except GitkbError as exc:
        raise CheckFailed(f"gitkb refuses the bundle: {exc.message}") from None
    lines = [f"bundle {bundle.name}: {len(bundle.cases)} cases, backend {bundle.backend}"]
    protected = [c.case_id for c in bundle.cases if c.protected]
    if not protected:
        raise CheckFailed("no protected case: the baseline gate would check nothing")
    lines.append(f"protected: {', '.join(protected)}")
    if bundle.kernel is None:
        raise CheckFailed("the bundle ships no kernel.py")
    source = bundle.kernel.read_text(encoding="utf-8")
    if not bundle.tunables:
        raise CheckFailed("target.json declares no tunables: the knobs provider has nothing")
    for name, values in bundle.tunables.items():
        try:
            value = knobs.current_value(source, name)
        except GitkbError as exc:
            raise CheckFailed(exc.message) from None
        if value not in values:
            raise CheckFailed(f"kernel.py sets {name} = {value!r}, not one of {values}")
    provider = providers.load("knobs", providers.ProviderOptions(), bundle.tunables)
    context = providers.ProposalContext(
        experiment_id="r001-c001",
        best_source=source,
        baseline_source=source,
        best_id="baseline",
        target=bundle.target,
        cases=[dict(c.raw) for c in bundle.cases],
        best_cases=[],
        best_profile={},
    )
    first = provider.propose(context)
    if first is None or first.source == source:
        raise CheckFailed("the knobs provider proposes no candidate from the declared tunables")
    width = sum(len(v) - 1 for v in bundle.tunables.values())
    lines.append(
        f"knobs: {', '.join(bundle.tunables)}; {width} one-knob moves; first: {first.change}"
    )
    hardware = hardware_tokens(bundle.target)[0]
    from gitkb import targets

    found = targets.lookup(hardware)
    if found is None:
        raise CheckFailed(f"target.json names hardware {hardware!r} that no hardware.toml knows")
    tool = profiler_mapping(bundle.backend).get("tool", "none")
    lines.append(f"hardware {hardware} -> {found.vendor}/{found.arch}; native profiler {tool}")
    lines += check_harness(path, source, bundle.target)
    return lines


def check_harness(path: Path, source: str, target: dict) -> list[str]:
    """The harness imports without torch, and without a usable GPU its build says why."""
    torch_before = "torch" in sys.modules
    try:
        harness = load_harness(path)
    except Exception as exc:  # noqa: BLE001 - any import failure is the finding
        raise CheckFailed(f"harness.py does not import: {exc!r}") from None
    if not torch_before and "torch" in sys.modules:
        raise CheckFailed("harness.py imports torch at module level (it must import lazily)")
    lines = ["harness imports without torch"]
    problem = getattr(harness, "environment_problem", lambda: None)()
    if problem is None:
        return [*lines, "harness: torch, triton and a device are usable here"]
    built = harness.build(source, target)
    diagnostics = built.get("diagnostics") if isinstance(built, dict) else None
    if not isinstance(built, dict) or built.get("success") is not False or not diagnostics:
        raise CheckFailed(f"build() without a usable GPU did not refuse with a reason: {built!r}")
    message = str(diagnostics[0])
    if "\n" in message or "Traceback" in message:
        raise CheckFailed(f"build() refused with more than one line: {message[:300]!r}")
    return [*lines, f"build without a GPU refuses: {message}"]


def check_toolchain(dry_run: bool) -> list[str]:
    """What Triton needs to build its launcher at first launch: a C compiler and Python.h."""
    import os
    import sysconfig

    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    scheme = sysconfig.get_default_scheme()
    scheme = "posix_prefix" if scheme == "posix_local" else scheme  # as Triton does on Debian
    header = Path(sysconfig.get_paths(scheme=scheme)["include"]) / "Python.h"
    shown = header if header.is_file() else "none"
    missing = []
    if compiler is None:
        missing.append("a C compiler (gcc or clang on PATH, or CC)")
    if not header.is_file():
        missing.append(f"Python's headers ({header}; Debian: apt-get install python3-dev)")
    needs = " and ".join(missing)
    if missing and not dry_run:
        raise CheckFailed(f"Triton compiles a launcher at first use and needs {needs}")
    lines = [f"C compiler: {compiler or 'none'}", f"Python.h: {shown}"]
    if missing:
        lines.append(f"WARNING: a real run will fail without {needs}")
    return lines


def check_compile(path: Path) -> list[str]:
    """The kernel compiles to sm_90 cubins: the baseline and the widest settings (every knob
    at its largest value) for each case's dtype, every one-knob move for the first dtype."""
    from gitkb.optimize import bundle as bundle_mod
    from gitkb.optimize.providers import knobs

    bundle = bundle_mod.load(bundle_mod.sources(path))
    harness = load_harness(path)
    baseline = bundle.kernel.read_text(encoding="utf-8")
    dtypes = list({c.parameters.get("dtype"): c.raw for c in bundle.cases}.values())
    widest = baseline
    for name, values in bundle.tunables.items():
        widest = knobs.rewrite(widest, name, max(values))
    plan = [("baseline", baseline, dtypes), ("widest", widest, dtypes)]
    for name, values in bundle.tunables.items():
        for value in values:
            plan.append((f"{name}={value}", knobs.rewrite(baseline, name, value), dtypes[:1]))
    largest = compiled_count = 0
    for label, source, cases in plan:
        for case in cases:
            try:
                compiled = harness.compile_check(source, case)
            except Exception as exc:  # noqa: BLE001 - any compiler failure is the finding
                raise CheckFailed(
                    f"{label} does not compile for sm_90 ({case['case_id']}): "
                    + (str(exc).strip().splitlines() or [repr(exc)])[-1][:300]
                ) from None
            if compiled["shared_bytes"] > SM90_MAX_SHARED_BYTES:
                raise CheckFailed(
                    f"{label} needs {compiled['shared_bytes']} bytes of shared memory "
                    f"({case['case_id']}); sm_90 allows {SM90_MAX_SHARED_BYTES}"
                )
            largest = max(largest, compiled["shared_bytes"])
            compiled_count += 1
    import triton

    return [
        f"triton {triton.__version__}: {compiled_count} sm_90 cubins (baseline and widest "
        f"settings for {len(dtypes)} dtypes, each knob value); most shared memory {largest} bytes"
    ]


def smoke(bundle: Path) -> str:
    """Build the shipped kernel and verify the protected case on the GPU, once."""
    harness = load_harness(bundle)
    cases = read_json(bundle / "cases.json", "cases.json")
    case = next((c for c in cases if c.get("protected", True)), cases[0])
    source = (bundle / "kernel.py").read_text(encoding="utf-8")
    built = harness.build(source, read_json(bundle / "target.json", "target.json"))
    if not built.get("success"):
        raise CheckFailed("smoke: build failed: " + "; ".join(built.get("diagnostics") or []))
    try:
        verdict = harness.verify(built["artifact"], case)
    except Exception as exc:  # noqa: BLE001 - the first launch is where the toolchain shows
        lines = str(exc).strip().splitlines() or [repr(exc)]
        raise CheckFailed(
            f"smoke: the first launch failed: {type(exc).__name__}: {lines[-1]}"
        ) from None
    if not verdict.get("passed"):
        raise CheckFailed(f"smoke: {case['case_id']}: " + "; ".join(verdict["diagnostics"]))
    error = dig(verdict, "metrics", "max_abs_err")
    error = f"{error:.3g}" if isinstance(error, float) else "-"
    return f"smoke: the shipped kernel built and passed {case['case_id']} (max_abs_err {error})"


def probe_device(bundle: Path, dry_run: bool) -> dict:
    """torch's view of the GPU, the tool versions, and where ncu is."""
    harness = load_harness(bundle)
    target = read_json(bundle / "target.json", "target.json")
    ncu = harness.find_ncu()
    device = {
        "gpu": False,
        "reason": None,
        "name": None,
        "sm": None,
        "target_architecture": target.get("architecture"),
        "ncu": ncu,
        "nvidia_smi": shutil.which("nvidia-smi"),
    }
    problem = harness.environment_problem()
    if problem is None and harness.interpreting():
        problem = "TRITON_INTERPRET=1: the Triton interpreter on the CPU, no GPU"
    if problem is None:
        import torch
        import triton

        major, minor = torch.cuda.get_device_capability(0)
        device.update(
            gpu=True,
            name=torch.cuda.get_device_name(0),
            sm=f"sm_{major}{minor}",
            torch=torch.__version__,
            triton=triton.__version__,
            cuda=torch.version.cuda,
        )
    else:
        device["reason"] = problem
    if dry_run:
        device["reason"] = "dry run: " + (problem or "the GPU was not used")
    return device


def make_rehearsal_bundle(source: Path, dest: Path) -> None:
    """A copy of ``source`` with a small budget (the copy, never the shipped bundle)."""
    shutil.copytree(source, dest)
    budget = dest / "budget.json"
    current = read_json(budget, "budget.json") if budget.exists() else {}
    budget.write_text(json.dumps(dict(current, **REHEARSAL_BUDGET), indent=1) + "\n")


# ---------------------------------------------------------------- per-step verdicts


def expect_optimize(result_path: str, repo: str | None) -> str:
    result = read_json(result_path, "optimize")
    if not result.get("winner"):
        raise CheckFailed(
            f"no winner (stopping reason {result.get('stopping_reason')}); see {result_path}"
        )
    commit = result.get("auto_commit")
    commit = commit if isinstance(commit, dict) else {}
    if not commit.get("success"):
        why = commit.get("diagnostics") or result.get("commit_skipped") or "no commit attempted"
        raise CheckFailed(f"winner {result['winner']} not committed: {why}")
    sha = commit.get("commit_revision") or ""
    if repo is not None:
        head = subprocess.run(
            ["git", "-C", repo, "log", "-1", "--format=%H%n%(trailers:key=TLX-Agent,valueonly)"],
            capture_output=True,
            text=True,
        )
        lines = head.stdout.split()
        if head.returncode != 0 or not lines or lines[0] != sha:
            raise CheckFailed(f"the scratch repo's HEAD is not the winner commit {sha[:12]}")
        if "authored" not in lines[1:]:
            raise CheckFailed(f"winner commit {sha[:12]} has no 'TLX-Agent: authored' trailer")
    experiments = len(result.get("experiments") or [])
    return (
        f"winner {result['winner']} at {fmt(dig(result, 'final', 'aggregate_speedup'), 'x')} "
        f"after {experiments} experiments; committed {sha[:12]}; "
        f"trace {dig(result, 'trace', 'label', default='?')}"
    )


def expect_mine(path: str) -> str:
    mined = read_json(path, "mine")
    counts = mined.get("counts") or {}
    if not counts.get("insert"):
        raise CheckFailed(f"no record admitted from the trace (counts {counts}); see {path}")
    return f"{mined.get('versions', '?')} versions -> {counts_text(counts)}"


def expect_validate(path: str) -> str:
    report = read_json(path, "validate")
    failed = [g for g in report.get("gates") or [] if g.get("status") == "FAIL"]
    if failed or report.get("failed"):
        first = failed[0] if failed else {}
        finding = dig(first, "findings", 0, default={})
        raise CheckFailed(
            f"gates failed: {', '.join(g.get('gate', '?') for g in failed)} "
            f"(first finding: {finding or first.get('reason')})"
        )
    return f"{report.get('records', '?')} records; {gates_text(report)}"


def expect_warm_start(path: str) -> str:
    result = read_json(path, "warm start")
    warm = result.get("warm_start")
    if not isinstance(warm, dict):
        raise CheckFailed(f"result.json has no warm_start block ({path})")
    if warm.get("read_reason") != "read" or not warm.get("offered"):
        raise CheckFailed(f"the store offered nothing (read_reason {warm.get('read_reason')})")
    adopted = warm.get("adopted")
    if not adopted:
        judged = [c for c in warm.get("candidates") or [] if isinstance(c, dict)]
        outcomes = ", ".join(f"{c.get('record')}: {c.get('outcome')}" for c in judged)
        raise CheckFailed(f"no warm-start candidate was adopted ({outcomes or 'none judged'})")
    write_back = result.get("write_back")
    write_back = write_back if isinstance(write_back, dict) else {}
    if write_back.get("attempted") and not write_back.get("success"):
        raise CheckFailed(f"write-back into the store failed: {write_back.get('error')}")
    return (
        f"adopted {adopted.get('record')} at {fmt(adopted.get('aggregate_speedup'), 'x')}; "
        f"total {fmt(result.get('total_speedup'), 'x')}, "
        f"incremental {fmt(result.get('incremental_speedup'), 'x')}; "
        f"write-back {counts_text(write_back.get('counts') or {})}"
    )


EXPECTATIONS = {
    "optimize": expect_optimize,
    "mine": expect_mine,
    "validate": expect_validate,
    "warm-start": expect_warm_start,
}


# ---------------------------------------------------------------- the table


def fmt(value, unit: str = "", digits: int = 2) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:.{digits}f}{unit}"


def counts_text(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "nothing"


def gates_text(report: dict) -> str:
    gates = report.get("gates") or []
    tally: dict[str, list[str]] = {}
    for gate in gates:
        tally.setdefault(gate.get("status", "?"), []).append(gate.get("gate", "?"))
    parts = [f"{len(names)} {status}" for status, names in sorted(tally.items())]
    skipped = tally.get("SKIP")
    return ", ".join(parts) + (f" (skipped: {', '.join(skipped)})" if skipped else "")


def profiler_text(run_dir: Path) -> str:
    """What the baseline's deep profile used: ncu with its durations, or why none."""
    profiles = read_optional(run_dir / "baseline_profile.json")
    if not isinstance(profiles, dict):
        return "unknown (no readable baseline_profile.json)"
    if not profiles:
        return "none: the harness returned no profile"
    durations, reasons = [], []
    for case_id, profile in sorted(profiles.items()):
        if not isinstance(profile, dict):
            continue
        if isinstance(profile.get("duration_us"), int | float):
            durations.append(f"{case_id} {profile['duration_us']:.2f} us")
        elif profile.get("error"):
            reasons.append(str(profile["error"]).splitlines()[0])
        else:
            reasons += [str(d) for d in profile.get("diagnostics") or []][:1]
    if durations:
        return f"ncu, {len(durations)} of {len(profiles)} cases: " + "; ".join(durations)
    return "none: " + (reasons[0] if reasons else "no profile reported a duration")


def read_optional(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def device_text(device: dict) -> str:
    if not device.get("gpu"):
        return f"no GPU ({device.get('reason') or 'unknown'})"
    versions = ", ".join(
        f"{k} {device[k]}" for k in ("torch", "triton", "cuda") if device.get(k) is not None
    )
    text = f"{device.get('name')} ({device.get('sm')}); {versions}"
    target = device.get("target_architecture")
    if target and device.get("sm") and target != device["sm"]:
        text += f"; NOTE the bundle targets {target}"
    return text


def case_rows(label: str, result: dict) -> list[list[str]]:
    baseline = {c.get("case_id"): c for c in dig(result, "baseline", "cases", default=[])}
    rows = []
    for case in dig(result, "final", "cases", default=[]):
        base = baseline.get(case.get("case_id"), {})
        rows.append(
            [
                str(case.get("case_id")) + (" *" if case.get("protected") else ""),
                label,
                fmt(base.get("median_us")),
                fmt(case.get("median_us")),
                fmt(case.get("speedup"), "x", 3),
                fmt(base.get("cv"), digits=3),
                fmt(case.get("cv"), digits=3),
                "yes" if case.get("correct") else "NO",
            ]
        )
    return rows


def render_table(args) -> str:
    device = read_json(args.device, "device")
    runs = [("1", Path(args.run_1)), ("2", Path(args.run_2))]
    results = {label: read_json(path / "result.json", f"run {label}") for label, path in runs}
    mined = read_json(args.mine, "mine")
    validated = read_json(args.validate, "validate")
    first, second = results["1"], results["2"]
    warm = second.get("warm_start") or {}
    adopted = warm.get("adopted") or {}
    summary = [
        ("device", device_text(device)),
        ("bundle", f"{args.bundle_name} (knobs provider)"),
        ("profiler", profiler_text(Path(args.run_1))),
        (
            "run 1 (cold)",
            f"winner {first.get('winner')}, "
            f"{fmt(dig(first, 'final', 'aggregate_speedup'), 'x', 3)}, "
            f"{len(first.get('experiments') or [])} experiments, "
            f"commit {str(dig(first, 'auto_commit', 'commit_revision', default='-'))[:12]}, "
            f"stopped: {first.get('stopping_reason')}",
        ),
        (
            "run 2 (warm)",
            f"adopted {adopted.get('record', 'nothing')}, "
            f"total {fmt(second.get('total_speedup'), 'x', 3)}, "
            f"incremental {fmt(second.get('incremental_speedup'), 'x', 3)}, "
            f"winner {second.get('winner')}",
        ),
        (
            "records admitted",
            f"mine: {counts_text(mined.get('counts') or {})}; write-back: "
            f"{counts_text(dig(second, 'write_back', 'counts', default={}))}",
        ),
        ("gate verdicts", gates_text(validated)),
    ]
    header = ["case (* protected)", "run", "base us", "final us", "speedup", "cv base", "cv final"]
    rows = [[*header, "ok"], *case_rows("1", first), *case_rows("2", second)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) + 1)]
    out = []
    if args.title:
        out.append(args.title)
    key_width = max(len(k) for k, _ in summary)
    out += [f"{k:<{key_width}}  {v}" for k, v in summary]
    rule = "-" * (sum(widths) + 2 * len(widths))
    out.append(rule)
    for index, row in enumerate(rows):
        cells = [cell.rjust(width) for cell, width in zip(row, widths, strict=True)]
        cells[0] = row[0].ljust(widths[0])
        out.append("  ".join(cells))
        if index == 0:
            out.append(rule)
    return "\n".join(out)


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("bundle", help="check a bundle as gitkb and its harness see it")
    p.add_argument("bundle", type=Path)
    p = commands.add_parser("toolchain", help="what Triton needs to compile a launcher")
    p.add_argument("--dry-run", action="store_true")
    p = commands.add_parser("compile", help="compile the kernel and its knobs for sm_90")
    p.add_argument("bundle", type=Path)
    p = commands.add_parser("device", help="probe the GPU; exit 3 when there is none")
    p.add_argument("bundle", type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--dry-run", action="store_true")
    p = commands.add_parser("rehearsal-bundle", help="copy a bundle with a small budget")
    p.add_argument("source", type=Path)
    p.add_argument("dest", type=Path)
    p = commands.add_parser("expect", help="one step's verdict from what it wrote")
    p.add_argument("step", choices=sorted(EXPECTATIONS))
    p.add_argument("path")
    p.add_argument("--repo", help="optimize: the kernel repository the winner went into")
    p = commands.add_parser("table", help="the closing table")
    for name in ("device", "run-1", "run-2", "mine", "validate"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--bundle-name", default="triton_softmax")
    p.add_argument("--title", default="")
    args = parser.parse_args(argv)
    try:
        if args.command == "bundle":
            print("\n".join(check_bundle(args.bundle)))
        elif args.command == "toolchain":
            print("\n".join(check_toolchain(args.dry_run)))
        elif args.command == "compile":
            print("\n".join(check_compile(args.bundle)))
        elif args.command == "device":
            device = probe_device(args.bundle, args.dry_run)
            args.out.write_text(json.dumps(device, indent=1) + "\n", encoding="utf-8")
            print(device_text(device) + (f"; ncu {device['ncu'] or 'not found'}"))
            if not device["gpu"] and not args.dry_run:
                print(device["reason"], file=sys.stderr)
                return EXIT_NO_GPU
            if device["gpu"] and not args.dry_run:
                print(smoke(args.bundle))
        elif args.command == "rehearsal-bundle":
            make_rehearsal_bundle(args.source, args.dest)
        elif args.command == "expect":
            check = EXPECTATIONS[args.step]
            print(check(args.path, args.repo) if args.step == "optimize" else check(args.path))
        else:
            print(render_table(args))
    except CheckFailed as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
