"""An optimization bundle: harness.py, cases.json, target.json, optional budget.json and
reference_kernel.py.

The files come from a BUNDLE folder, from explicit paths (the TLX agent's
``--harness --cases --target --budget --reference-kernel``), or both (an explicit
path wins). They are read and checked against the schemas in ``schema/bundle/``
before anything runs; a bad bundle is refused with the file and the field named.
The run then evaluates only a frozen copy (``gitkb.optimize.freeze``).
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NoReturn

from gitkb import schema
from gitkb.errors import GitkbError

HARNESS_FUNCTIONS = ("build", "verify", "benchmark")
# What the TLX agent fills into the target a harness's build() gets when target.json lacks it.
TARGET_DEFAULTS: dict[str, object] = {
    "device": None,
    "environment": {},
    "optimization_guidance": "",
}
# The canonical file names inside a (frozen) bundle folder.
NAMES = {
    "harness": "harness.py",
    "cases": "cases.json",
    "target": "target.json",
    "budget": "budget.json",
    "reference_kernel": "reference_kernel.py",
}


@dataclass(frozen=True)
class Budget:
    """How long and how hard the loop searches (the TLX agent's defaults)."""

    max_rounds: int = 5
    candidates_per_round: int = 2
    max_candidate_seconds: float = 600.0
    max_total_seconds: float = 3600.0
    min_speedup: float = 1.01
    max_cv: float = 0.1
    benchmark_repetitions: int = 10

    @classmethod
    def effective(
        cls, flags: dict, budget_file: dict, file_given: bool = False
    ) -> tuple[Budget, dict[str, str]]:
        """The budget and where each value came from (``flag``, ``--budget``, ``budget.json``
        or ``default``). A file named with ``--budget`` overrides the flags key by key (the
        TLX agent's documented rule); a bundle folder's own budget.json, found without
        ``--budget``, is overridden by them."""
        values, sources = {}, {}
        file_label = "--budget" if file_given else "budget.json"
        for name in (f.name for f in fields(cls)):
            from_flag = flags.get(name) is not None
            if name in budget_file and (file_given or not from_flag):
                values[name], sources[name] = budget_file[name], file_label
            elif from_flag:
                values[name], sources[name] = flags[name], "flag"
            else:
                sources[name] = "default"
        return cls(**values), sources


@dataclass(frozen=True)
class Sources:
    """Where a run's bundle files are: ``folder`` is what gets frozen whole (the bundle
    folder, else the harness's folder, for its helper modules and data)."""

    folder: Path
    harness: Path
    cases: Path
    target: Path
    budget: Path | None = None
    reference_kernel: Path | None = None
    kernel: Path | None = None  # the bundle's own kernel.py
    budget_given: bool = False  # budget.json came from --budget (it then beats the flags)


def find_by_convention(kernel: Path, arch: str | None, roots: list[Path]) -> Path | None:
    """The TLX agent's kernel-only form: the bundle of ``--kernel NAME.py`` is the folder
    ``<root>/<arch>/targets/NAME/`` (TLX's ``harnesses/`` layout; gitkb's own ``targets/``
    holds ``<backend>/examples/NAME/``). Without ``--arch`` the first architecture, in
    name order, that has one; None when no root has it."""
    stem = kernel.stem
    for root in roots:
        if not root.is_dir():
            continue
        archs = [arch] if arch else sorted(p.name for p in root.iterdir() if p.is_dir())
        for name in archs:
            for kind in ("targets", "examples"):
                folder = root / name / kind / stem
                if (folder / NAMES["harness"]).is_file():
                    return folder
    return None


def sources(
    bundle: Path | None = None,
    harness: Path | None = None,
    cases: Path | None = None,
    target: Path | None = None,
    budget: Path | None = None,
    reference_kernel: Path | None = None,
) -> Sources:
    """The bundle's files: BUNDLE's own, with each explicit path in place of its file."""
    if bundle is not None:
        root = Path(bundle)
        if not root.is_dir():
            raise GitkbError(f"bundle is not a folder ({root})")

        def own(name: str) -> Path | None:
            path = root / NAMES[name]
            return path if path.is_file() else None

        kernel = root / "kernel.py"
        return Sources(
            folder=root,
            harness=Path(harness) if harness else root / NAMES["harness"],
            cases=Path(cases) if cases else root / NAMES["cases"],
            target=Path(target) if target else root / NAMES["target"],
            budget=Path(budget) if budget else own("budget"),
            reference_kernel=Path(reference_kernel)
            if reference_kernel
            else own("reference_kernel"),
            kernel=kernel if kernel.is_file() else None,
            budget_given=budget is not None,
        )
    if harness is None or cases is None or target is None:
        given = (("--harness", harness), ("--cases", cases), ("--target", target))
        missing = [flag for flag, value in given if value is None]
        raise GitkbError(f"no bundle: give a BUNDLE folder, or {', '.join(missing)} as well")
    for flag, value in (("--harness", harness), ("--cases", cases), ("--target", target)):
        if not Path(value).is_file():
            raise GitkbError(f"{flag}: no such file ({value})")
    return Sources(
        folder=Path(harness).resolve().parent,
        harness=Path(harness),
        cases=Path(cases),
        target=Path(target),
        budget=Path(budget) if budget else None,
        reference_kernel=Path(reference_kernel) if reference_kernel else None,
        budget_given=budget is not None,
    )


@dataclass(frozen=True)
class Case:
    case_id: str
    parameters: dict
    weight: float
    protected: bool
    raw: dict = field(repr=False)  # what the harness receives, unknown fields included


@dataclass(frozen=True)
class Bundle:
    path: Path  # the folder (the frozen copy, once the run has one)
    harness: Path
    cases: tuple[Case, ...]
    target: dict
    budget_file: dict  # budget.json's values (explicit flags beat them)
    kernel: Path | None  # the bundle's own kernel.py, when it ships one
    reference_kernel: Path | None
    has_profile: bool  # the harness defines profile()

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


def _read_json(path: Path) -> Any:  # JSON: the caller checks it against its schema
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GitkbError(f"bundle file missing ({path})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GitkbError(f"bundle file unreadable: {exc} ({path})") from None

    def refuse_constant(name: str) -> NoReturn:
        raise GitkbError(f"bundle file holds {name}, which is not a finite number ({path})")

    try:
        return json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise GitkbError(
            f"bundle file is not valid JSON: {exc.msg} at line {exc.lineno} ({path})"
        ) from None


def _check(document: dict, schema_name: str, path: Path) -> None:
    problems = schema.errors(document, f"bundle/{schema_name}", limit=1)
    if problems:
        where, message = problems[0]
        raise GitkbError(f"{message} at {where} ({path})")


def _harness_names(path: Path) -> set[str]:
    """The names the harness defines at top level (read, not run)."""
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
    return defined


def _cases(path: Path) -> tuple[Case, ...]:
    raw_cases = _read_json(path)
    _check(raw_cases, "cases", path)
    cases = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_cases):
        case_id = raw["case_id"]
        if case_id in seen:
            raise GitkbError(f"duplicate case_id {case_id!r} at [{index}] ({path})")
        seen.add(case_id)
        weight = float(raw.get("weight", 1.0))
        if not math.isfinite(weight):
            raise GitkbError(f"weight must be finite at [{index}].weight ({path})")
        case = dict(raw, parameters=raw.get("parameters", {}), weight=weight)
        case["protected"] = bool(raw.get("protected", True))
        cases.append(Case(case_id, case["parameters"], weight, case["protected"], case))
    return tuple(cases)


def load(files: Sources) -> Bundle:
    """Read and check a bundle's files; raise GitkbError naming the file and field."""
    defined = _harness_names(files.harness)
    cases = _cases(files.cases)
    target = _read_json(files.target)
    _check(target, "target", files.target)
    target = {**TARGET_DEFAULTS, **target}
    budget_file = {}
    if files.budget is not None:
        budget_file = _read_json(files.budget)
        _check(budget_file, "budget", files.budget)
    if files.reference_kernel is not None and not files.reference_kernel.is_file():
        raise GitkbError(f"--reference-kernel: no such file ({files.reference_kernel})")
    return Bundle(
        path=files.folder,
        harness=files.harness,
        cases=cases,
        target=target,
        budget_file=budget_file,
        kernel=files.kernel,
        reference_kernel=files.reference_kernel,
        has_profile="profile" in defined,
    )
