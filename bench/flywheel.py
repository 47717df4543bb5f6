"""The flywheel: does a run that starts from the store beat a cold one, and does the store
get better with every run?

Two families of the bundled CPU bundles, each at several shapes: ``blocked_matmul``
(one kernel, its best BLOCK at most shapes the same) and ``softmax_unsafe`` (its best
ROW_TILE moves with the row count). Every shape is run cold (no store) and warm: the
warm runs of a family share one store, served by a bare server with gitkb's
pre-receive hook, and each warm run goes clone -> resolve/query -> optimize
(``--warm-start on --kb``, which mines its own trace back) -> ``curate --cards
--apply`` -> push. The sequence is repeated ``--repeats`` times for noise.

Per run it prints the evaluations until the cold run's final speedup was reached
(warm-start candidates counted; for the cold run, the evaluation that measured the
code it ended with; for the warm run, the first that measured that same code or a
speedup within ``--tolerance`` of the cold final, every speedup against the run's
original baseline), the final speedup and the wall time, and for each warm run which
techniques its store held (each strategy's, anti-strategy's and technique card's
canonical technique, as the index cache derives it: a card's is the technique it is
about; an uncategorized lever by its own phrase) and which of them the run used (the
records it tried as warm-start candidates, adopted, or cited in a proposal, a card
among them). A warm run whose store was
still empty (the first shape of a family) is a cold run: shown, not counted. Overall
it prints the warm/cold evaluations ratio, the figure (target <= 0.5x, with finals no
worse than cold), and says plainly when the target is missed.

Finals are compared on equal terms: each run's own final is one measurement against
its own baseline measurement, taken minutes apart on a loaded machine, so after both
runs of a shape the bench measures the cold and the warm final code side by side
(``--remeasure`` rounds; each round the kernel as found and both finals back to back,
in a rotating order, through the bundle's harness as optimize runs it; every round's
samples pooled and scored as optimize scores; the cold final is measured twice, before
and after the warm one, and how far its two numbers lie apart is the sitting's noise;
a second sitting of every pair after all runs, the finals' geomean over the two).
A warm final is no worse when it is the cold run's code, or when its re-measured
speedup is within ``--tolerance`` plus that noise of the cold one's (their mean): a gap
no larger than one code shows against itself is not evidence. The optimizer's own
runoff re-measurements (``runoff-*``: code measured earlier in the run) are not
counted as evaluations. The machine's load scatters timings: the CV bar is relaxed
(``MAX_CV``) so that medians decide, and the figures are one run's.

``--family BUNDLE:SHAPE;SHAPE...`` runs another family instead of the bundled two
(BUNDLE a folder of ``targets/cpu/examples`` or a bundle's path; a SHAPE is the
case's parameters, ``n=96,k=96,m=96,seed=1``; repeatable).

    python bench/flywheel.py [--repeats 2] [--tolerance 0.05] [--remeasure 5]
                             [--family SPEC]... [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402

TARGET_RATIO = 0.5
MAX_CV = 50.0
RUNOFF_PREFIX = "runoff-"  # the optimizer's final re-measurements of code it measured before
EXAMPLES = ROOT / "targets" / "cpu" / "examples"
# (family, bundle, shapes: case parameters per shape; the first case is the protected one)
FAMILIES = (
    (
        "blocked_matmul",
        "blocked_matmul",
        [{"n": n, "k": n, "m": n, "seed": 1} for n in (96, 160, 256)],
    ),
    (
        "softmax",
        "softmax_unsafe",
        [
            {"rows": rows, "cols": cols, "scale": 60.0, "seed": 2}
            for rows, cols in ((4096, 64), (512, 512), (64, 2048))
        ],
    ),
)


@dataclass
class RunFigures:
    family: str
    shape: str
    mode: str  # cold or warm
    evaluations: list[float | None] = field(default_factory=list)  # speedup of each, in order
    warm_candidates: int = 0
    final: float = 1.0
    wall_s: float = 0.0
    store_empty: bool = False  # a warm run with nothing stored yet is a cold run
    ids: list[str] = field(default_factory=list)  # the evaluations' experiment ids
    codes: list[str] = field(default_factory=list)  # the evaluations' source keys
    final_code: str = ""  # the source key of the code the run ended with
    winner: str | None = None
    remeasured: float | None = None  # the final code's speedup, measured beside the other's
    noise: float = 0.0  # the cold final against itself in a sitting (relative; the widest)
    sittings: list[float | None] = field(default_factory=list)  # remeasured, per sitting
    held: list[str] = field(default_factory=list)  # the techniques the warm run's store held
    used: list[str] = field(default_factory=list)  # of them, those the run used

    def own_reach(self) -> int:
        """Evaluations until this run first measured the code it ended with (0: the
        baseline)."""
        if self.winner is None or self.final_code not in self.codes:
            return 0
        return self.codes.index(self.final_code) + 1

    def to_reach(self, cold: RunFigures, tolerance: float) -> int | None:
        """Evaluations until this run reached ``cold``'s result: it measured the code the
        cold run ended with, or a speedup within ``tolerance`` of its final (None: never).
        The code counts as well as the number: on a loaded machine one kernel's speedup
        scatters more than the tolerance between two measurements."""
        goal = cold.final
        if cold.winner is None or goal <= 1.0 + tolerance:
            return 0  # the cold run kept the baseline: nothing to reach
        for n, (value, code) in enumerate(zip(self.evaluations, self.codes, strict=True), 1):
            if code == cold.final_code or (value is not None and value >= goal * (1 - tolerance)):
                return n
        return None

    def no_worse_than(self, cold: RunFigures, tolerance: float) -> bool:
        """The run ended with the cold run's code, or its code measured beside the cold
        run's is at least as fast, within ``tolerance`` and this sitting's noise (a gap no
        larger than the cold code shows against itself is not evidence)."""
        if self.final_code == cold.final_code:
            return True
        if self.remeasured is None:  # warm's code failed a case: worse, unless cold's did too
            return cold.remeasured is None
        if cold.remeasured is None:
            return True
        return self.remeasured >= cold.remeasured * (1 - tolerance - self.noise)


def shape_label(parameters: dict) -> str:
    return "x".join(str(v) for k, v in parameters.items() if k not in ("seed", "scale"))


def make_bundle(work: Path, bundle: str, parameters: dict) -> Path:
    """The bundle at one shape: its cases are that shape (protected) and a second seed."""
    source = EXAMPLES / bundle if (EXAMPLES / bundle).is_dir() else Path(bundle)
    folder = work / "bundles" / f"{source.name}-{shape_label(parameters)}"
    if folder.exists():
        return folder
    shutil.copytree(source, folder)
    cases = [
        {"case_id": f"shape-{shape_label(parameters)}", "parameters": parameters,
         "weight": 1.0, "protected": True},
        {"case_id": f"shape-{shape_label(parameters)}-b",
         "parameters": dict(parameters, seed=parameters.get("seed", 0) + 10), "weight": 1.0},
    ]  # fmt: skip
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))
    return folder


def kb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gitkb", *args], cwd=cwd, capture_output=True, text=True
    )


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def optimize(bundle: Path, out: Path, store: Path | None) -> tuple[dict, float]:
    # A loaded machine's timings scatter: the CV bar is relaxed so that medians decide.
    args = [
        "optimize",
        str(bundle),
        "--output",
        str(out),
        "--no-commit-winner",
        "--no-profile",
        "--max-cv",
        str(MAX_CV),
    ]
    if store is not None:
        args += ["--warm-start", "on", "--kb", str(store)]
    start = time.perf_counter()
    done = kb(*args)
    wall = time.perf_counter() - start
    result = out / "result.json"
    if not result.is_file():
        raise SystemExit(f"flywheel: optimize {bundle.name} wrote no result: {done.stderr[-2000:]}")
    return json.loads(result.read_text()), wall


def code_key(path: Path) -> str:
    from gitkb.optimize.scoring import source_key

    return source_key(path.read_text(encoding="utf-8")) if path.is_file() else ""


def figures_of(family: str, shape: str, mode: str, out: Path, doc: dict, wall: float) -> RunFigures:
    found = RunFigures(
        family,
        shape,
        mode,
        wall_s=wall,
        final=(doc.get("final") or {}).get("aggregate_speedup") or 1.0,
        winner=doc.get("winner"),
        final_code=code_key(out / "best_kernel.py"),
    )
    for experiment in doc["experiments"]:  # TLX's experiment shape
        exp_id = experiment["experiment_id"]
        if exp_id == "baseline" or exp_id.endswith("-deep") or exp_id.startswith(RUNOFF_PREFIX):
            continue
        found.evaluations.append((experiment.get("performance") or {}).get("aggregate_speedup"))
        found.ids.append(exp_id)
        found.codes.append(code_key(out / "experiments" / exp_id / "kernel.py"))
        found.warm_candidates += exp_id.startswith("ws-")
    return found


def remeasure(bundle: Path, sources: list[str], work: Path, rounds: int) -> list[float | None]:
    """Each of ``sources``' aggregate speedup over the bundle's kernel as found, measured in
    one sitting: per round, that kernel and every source back to back through the bundle's
    harness (gitkb's worker, as optimize runs it; the order rotates each round), then each
    kernel's samples of every round pooled and scored as optimize scores (case medians,
    weighted geomean). None: a source failed a protected case in some round."""
    from gitkb.optimize import bundle as bundles
    from gitkb.optimize import scoring, worker

    found = bundles.load(bundles.sources(bundle))
    budget = found.budget_file
    cases = [dict(c.raw) for c in found.cases]
    kernels = [(bundle / "kernel.py").read_text(encoding="utf-8"), *sources]
    scores: list[list[scoring.Score] | None] = [[] for _ in kernels]
    for round_no in range(rounds):
        order = list(range(len(kernels)))
        order = order[round_no % len(order) :] + order[: round_no % len(order)]
        for index in order:
            evaluation = worker.run_harness(
                found.harness, kernels[index], found.target, cases,
                budget.get("benchmark_repetitions", 15), work / f"r{round_no}-k{index}",
                budget.get("max_candidate_seconds", 60), found.environment,
            )  # fmt: skip
            response = evaluation.response
            held = scores[index]
            if held is None or response is None or not response["build"]["success"]:
                scores[index] = None
            else:
                held.append(scoring.score(response, found.cases, None))
    if scores[0] is None or not all(c.passed for s in scores[0] for c in s.cases):
        raise SystemExit(f"flywheel: the kernel of {bundle.name} no longer measures")
    base = scoring.pooled(scores[0], found.cases, None)
    out: list[float | None] = []
    for held in scores[1:]:
        pooled = scoring.pooled(held, found.cases, base) if held is not None else None
        out.append(pooled.aggregate if pooled is not None and pooled.protected_pass else None)
    return out


@dataclass
class Pair:
    """One shape's cold and warm run, and where their finals are (for the side by side)."""

    bundle: Path
    cold: RunFigures
    warm: RunFigures
    cold_out: Path
    warm_out: Path


def compare(pair: Pair, work: Path, rounds: int) -> None:
    """One sitting of both finals measured side by side, the cold one twice: how far its two
    numbers lie apart is the sitting's noise on one code. Each run's ``remeasured`` is the
    geomean over its sittings; ``noise`` the widest sitting's."""
    cold, warm = pair.cold, pair.warm
    cold_code = (pair.cold_out / "best_kernel.py").read_text(encoding="utf-8")
    warm_code = (pair.warm_out / "best_kernel.py").read_text(encoding="utf-8")
    first, found, again = remeasure(pair.bundle, [cold_code, warm_code, cold_code], work, rounds)
    both = None if first is None or again is None else statistics.geometric_mean([first, again])
    cold.sittings.append(both)
    warm.sittings.append(found)
    if both is not None:
        warm.noise = max(warm.noise, abs(first / again - 1))
    for run in (cold, warm):
        held = run.sittings
        run.remeasured = None if None in held else statistics.geometric_mean(held)


def serve(work: Path) -> Path:
    """A bare server store with the pre-receive hook (git-kb on PATH)."""
    server = work / "server.git"
    done = kb("init", "--bare", str(server))
    if done.returncode != 0:
        raise SystemExit(f"flywheel: init: {done.stderr}")
    done = kb("hooks", "install", "--server", str(server))
    if done.returncode != 0:
        raise SystemExit(f"flywheel: hooks install: {done.stderr}")
    return server


def store_techniques(store_path: Path) -> dict[str, str]:
    """Each live strategy's, anti-strategy's and technique card's technique in a store, by
    record id: its canonical key (a card's: the technique it is about), or
    ``uncategorized: <its phrase>``."""
    from gitkb.store import Store
    from gitkb.trace.techniques import CARD_TYPE, EVIDENCE_TYPES, record_technique

    view = Store.open(store_path).view()
    found = {}
    for entry in view.entries():
        if entry["type"] not in (*EVIDENCE_TYPES, CARD_TYPE) or entry["status"] != "active":
            continue
        record = view.read_record(entry["id"]).data
        if record is None:
            continue
        detection = record_technique(record)
        found[entry["id"]] = detection.key or f"uncategorized: {detection.phrase}"
    return found


def used_records(doc: dict) -> set[str]:
    """The store's records a run used: its warm-start candidates (tried or adopted) and the
    ids its proposals cited."""
    warm = doc.get("warm_start") or {}
    used = {c.get("record") for c in warm.get("candidates") or [] if isinstance(c, dict)}
    used.add((warm.get("adopted") or {}).get("record"))
    for experiment in doc.get("experiments") or []:
        used.update(experiment.get("kb_cited") or [])
    return {u for u in used if isinstance(u, str)}


def techniques_used(held: dict[str, str], doc: dict) -> list[str]:
    """The techniques (``held``: a store's, by record id) of the records a run used."""
    return sorted({held[i] for i in used_records(doc) if i in held})


def warm_run(
    work: Path, server: Path, bundle: Path, out: Path
) -> tuple[dict, float, list[str], list[str]]:
    clone = work / "clones" / out.name
    done = git("clone", "-q", str(server), str(clone))
    if done.returncode != 0:
        raise SystemExit(f"flywheel: clone: {done.stderr}")
    git("fetch", "-q", "origin", "refs/kb/traces/*:refs/kb/traces/*", cwd=clone)
    held = store_techniques(clone)
    doc, wall = optimize(bundle, out, clone)
    used = techniques_used(held, doc)
    start = time.perf_counter()
    cards = kb("curate", "--cards", "--apply", "--store", str(clone))
    if cards.returncode != 0:
        raise SystemExit(f"flywheel: curate --cards: {cards.stderr}")
    pushed = git("push", "-q", "origin", "main", "refs/kb/traces/*:refs/kb/traces/*", cwd=clone)
    if pushed.returncode != 0:
        raise SystemExit(f"flywheel: push refused: {pushed.stderr[-2000:]}")
    return doc, wall + time.perf_counter() - start, sorted(set(held.values())), used


def one_pass(work: Path, repeat: int, families, rounds: int) -> list[Pair]:
    out: list[Pair] = []
    for family, bundle_name, shapes in families:
        here = work / f"r{repeat}-{family}"
        server = serve(here)
        for position, parameters in enumerate(shapes):
            shape = shape_label(parameters)
            bundle = make_bundle(work, bundle_name, parameters)
            runs, folders = [], []
            for mode in ("cold", "warm"):
                folder = here / f"{mode}-{shape}"
                held: list[str] = []
                used: list[str] = []
                if mode == "cold":
                    doc, wall = optimize(bundle, folder, None)
                else:
                    doc, wall, held, used = warm_run(here, server, bundle, folder)
                found = figures_of(family, shape, mode, folder, doc, wall)
                found.held, found.used = held, used
                found.store_empty = mode == "warm" and position == 0
                runs.append(found)
                folders.append(folder)
            pair = Pair(bundle, runs[0], runs[1], folders[0], folders[1])
            compare(pair, here / f"remeasure-{shape}", rounds)
            out.append(pair)
    return out


def parse_family(spec: str) -> tuple[str, str, list[dict]]:
    """``BUNDLE:SHAPE;SHAPE`` (a SHAPE: ``name=value,...``, numbers read as numbers)."""
    bundle, _, shapes = spec.partition(":")
    if not bundle or not shapes:
        raise SystemExit(f"flywheel: --family {spec!r}: want BUNDLE:name=value,...;...")
    parsed = []
    for shape in shapes.split(";"):
        parameters = {}
        for pair in shape.split(","):
            name, _, value = pair.partition("=")
            if not name or not value:
                raise SystemExit(f"flywheel: --family {spec!r}: {pair!r} is not name=value")
            try:
                parameters[name.strip()] = json.loads(value)
            except json.JSONDecodeError:
                parameters[name.strip()] = value
        parsed.append(parameters)
    return Path(bundle).name, bundle, parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--remeasure", type=int, default=5, help="rounds of the side-by-side")
    parser.add_argument("--family", action="append", default=[], help="BUNDLE:SHAPE;SHAPE")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    bin_dir = Path(sys.executable).parent
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    work = args.keep or Path(tempfile.mkdtemp(prefix="gitkb-flywheel-"))
    work.mkdir(parents=True, exist_ok=True)
    families = [parse_family(f) for f in args.family] or FAMILIES
    pairs: list[Pair] = []
    try:
        for repeat in range(1, args.repeats + 1):
            pairs += one_pass(work, repeat, families, args.remeasure)
        # A second sitting of every side by side, minutes after the first: on a shared
        # machine the load, and with it which of two close kernels is faster, drifts.
        for number, pair in enumerate(pairs):
            compare(pair, work / "second-sitting" / str(number), args.remeasure)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report([r for p in pairs for r in (p.cold, p.warm)], args.tolerance, args.json)


def report(runs: list[RunFigures], tolerance: float, json_out: Path | None) -> None:
    rows = []
    print(f"{'family':15} {'shape':12} {'mode':5} {'evals':>5} {'ws':>3} {'to-reach':>8} "
          f"{'final':>7} {'side-by':>7} {'wall_s':>7}")  # fmt: skip
    every = [(c, w) for c, w in zip(runs[::2], runs[1::2], strict=True)]
    cold_evals, warm_evals, worse = 0, 0, []
    for cold, warm in every:
        goal = cold.final
        for r in (cold, warm):
            reach = r.own_reach() if r is cold else r.to_reach(cold, tolerance)
            shown = "never" if reach is None else str(reach)
            note = "  (store empty: not counted)" if r.store_empty else ""
            side = "failed" if r.remeasured is None else f"{r.remeasured:7.3f}"
            print(f"{r.family:15} {r.shape:12} {r.mode:5} {len(r.evaluations):5} "
                  f"{r.warm_candidates:3} {shown:>8} {r.final:7.3f} {side:>7} {r.wall_s:7.1f}"
                  + note)  # fmt: skip
            if r.mode == "warm":
                print(f"{'':15} techniques held: {', '.join(r.held) or 'none'}")
                print(f"{'':15} techniques used: {', '.join(r.used) or 'none'}")
            rows.append(dict(vars(r), to_reach=reach, goal=goal))
    # The figure is over the warm runs that had a store to start from.
    pairs = [(c, w) for c, w in every if not w.store_empty]
    for cold, warm in pairs:
        cold_reach = cold.own_reach()
        warm_reach = warm.to_reach(cold, tolerance)
        cold_evals += cold_reach
        # a warm run that never reached the cold final spent all it had, and then some
        warm_evals += warm_reach if warm_reach is not None else len(warm.evaluations) + 1
        if not warm.no_worse_than(cold, tolerance):
            worse.append(
                f"{warm.family} {warm.shape}: warm's final code {warm.remeasured or 0:.3f}x < "
                f"cold's {cold.remeasured or 0:.3f}x, measured side by side (noise "
                f"{warm.noise:.1%})"
            )
    ratio = warm_evals / cold_evals if cold_evals else float("nan")
    cold_final = statistics.geometric_mean([c.final for c, _ in pairs])
    warm_final = statistics.geometric_mean([w.final for _, w in pairs])
    side_cold = statistics.geometric_mean([c.remeasured or 1.0 for c, _ in pairs])
    side_warm = statistics.geometric_mean([w.remeasured or 1.0 for _, w in pairs])
    print()
    print(f"evaluations to reach the cold final: cold {cold_evals}, warm {warm_evals} "
          "(warm-start candidates counted)")  # fmt: skip
    print(f"final speedup (geomean over runs, each run's own): cold {cold_final:.3f}x, "
          f"warm {warm_final:.3f}x")  # fmt: skip
    print(f"final code measured side by side (geomean): cold {side_cold:.3f}x, "
          f"warm {side_warm:.3f}x; the cold code against itself there: median "
          f"{statistics.median(w.noise for _, w in pairs):.1%}, "
          f"max {max(w.noise for _, w in pairs):.1%}")  # fmt: skip
    print(f"wall time: cold {sum(c.wall_s for c, _ in pairs):.1f} s, "
          f"warm {sum(w.wall_s for _, w in pairs):.1f} s")  # fmt: skip
    figure("flywheel warm/cold evaluations", ratio, "x", TARGET_RATIO, "lower")
    missed = []
    if not ratio <= TARGET_RATIO:
        missed.append(f"warm/cold evaluations {ratio:.2f}x is above the {TARGET_RATIO}x target")
    missed += worse
    if missed:
        print("MISSED: " + "; ".join(missed))
    else:
        print(
            f"MET: warm runs reach the cold final in {ratio:.2f}x the evaluations, "
            "finals no worse than cold"
        )
    if json_out is not None:
        json_out.write_text(json.dumps({"ratio": ratio, "runs": rows, "missed": missed}, indent=1))


if __name__ == "__main__":
    main()
