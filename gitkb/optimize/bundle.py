"""An optimization bundle: harness.py, cases.json, target.json and an optional budget.json.

The bundle is a frozen trust boundary: it is read once, checked against the
schemas in ``schema/bundle/``, and never written. A bad bundle is refused before
anything runs, with the file and the field named.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from gitkb.errors import GitkbError

HARNESS_FUNCTIONS = ("build", "verify", "benchmark")


@dataclass(frozen=True)
class Budget:
    """How long and how hard the loop searches; ``budget.json`` keys override flags."""

    max_rounds: int = 3
    candidates_per_round: int = 4
    max_candidate_seconds: float = 300.0
    max_total_seconds: float = 3600.0
    min_speedup: float = 1.02
    max_cv: float = 0.1
    benchmark_repetitions: int = 10

    def merged(self, overrides: dict) -> Budget:
        known = {f.name for f in fields(self)}
        return replace(self, **{k: v for k, v in overrides.items() if k in known})


@dataclass(frozen=True)
class Case:
    case_id: str
    parameters: dict
    weight: float
    protected: bool
    raw: dict = field(repr=False)  # what the harness receives, unknown fields included


@dataclass(frozen=True)
class Bundle:
    path: Path
    harness: Path
    cases: tuple[Case, ...]
    target: dict
    budget_overrides: dict
    kernel: Path | None  # the bundle's own kernel.py, when it ships one

    @property
    def name(self) -> str:
        return self.path.resolve().name

    @property
    def backend(self) -> str:
        return self.target["backend"]

    @property
    def environment(self) -> dict[str, str]:
        return dict(self.target.get("environment") or {})

    @property
    def tunables(self) -> dict[str, list]:
        return dict(self.target.get("tunables") or {})

    def case(self, case_id: str) -> Case:
        return next(c for c in self.cases if c.case_id == case_id)


def _read_json(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GitkbError(f"bundle file missing ({path})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GitkbError(f"bundle file unreadable: {exc} ({path})") from None

    def refuse_constant(name: str):
        raise GitkbError(f"bundle file holds {name}, which is not a finite number ({path})")

    try:
        return json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise GitkbError(
            f"bundle file is not valid JSON: {exc.msg} at line {exc.lineno} ({path})"
        ) from None


def _check(document, schema_name: str, path: Path) -> None:
    from gitkb import schema

    problems = schema.errors(document, f"bundle/{schema_name}", limit=1)
    if problems:
        where, message = problems[0]
        raise GitkbError(f"{message} at {where} ({path})")


def _check_harness(path: Path) -> None:
    """The harness must define the three required functions at top level (read, not run)."""
    import ast

    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except FileNotFoundError:
        raise GitkbError(f"bundle file missing ({path})") from None
    except SyntaxError as exc:
        raise GitkbError(
            f"harness is not valid Python: {exc.msg} line {exc.lineno} ({path})"
        ) from None
    defined = {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    defined |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    missing = [name for name in HARNESS_FUNCTIONS if name not in defined]
    if missing:
        raise GitkbError(f"harness defines no {', '.join(missing)}() ({path})")


def load(path: str | Path) -> Bundle:
    """Read and check a bundle folder; raise GitkbError naming the file and field."""
    root = Path(path)
    if not root.is_dir():
        raise GitkbError(f"bundle is not a folder ({root})")
    harness = root / "harness.py"
    _check_harness(harness)

    cases_path = root / "cases.json"
    raw_cases = _read_json(cases_path)
    _check(raw_cases, "cases", cases_path)
    cases = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_cases):
        case_id = raw["case_id"]
        if case_id in seen:
            raise GitkbError(f"duplicate case_id {case_id!r} at [{index}] ({cases_path})")
        seen.add(case_id)
        weight = float(raw.get("weight", 1.0))
        if not math.isfinite(weight):
            raise GitkbError(f"weight must be finite at [{index}].weight ({cases_path})")
        case = dict(raw, parameters=raw.get("parameters", {}), weight=weight)
        case["protected"] = bool(raw.get("protected", True))
        cases.append(Case(case_id, case["parameters"], weight, case["protected"], case))

    target_path = root / "target.json"
    target = _read_json(target_path)
    _check(target, "target", target_path)

    budget_path = root / "budget.json"
    overrides = {}
    if budget_path.exists():
        overrides = _read_json(budget_path)
        _check(overrides, "budget", budget_path)

    kernel = root / "kernel.py"
    return Bundle(
        path=root,
        harness=harness,
        cases=tuple(cases),
        target=target,
        budget_overrides=overrides,
        kernel=kernel if kernel.is_file() else None,
    )
