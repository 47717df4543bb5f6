"""The package's house rules (docs/design.md), read off its source: who may speak SQL, who may
import dulwich, which layer may import which, and no reaching into private names."""

from __future__ import annotations

import ast
import re

import pytest
from helpers import ROOT

PACKAGE = ROOT / "gitkb"
# A statement's first words, as a query module spells them (upper case).
SQL = re.compile(r"\b(SELECT|INSERT INTO|DELETE FROM|UPDATE \w+ SET|CREATE (TABLE|INDEX)|PRAGMA)\b")
DESIGN = ROOT / "docs" / "design.md"


def layers(text: str) -> tuple[str, ...]:
    """The layer order, lowest first, as docs/design.md writes it down once (the fenced
    block of its "Layers" section): a package imports only packages below it (at the top of
    a module, in a function or for types alike). A row's first word is a package under
    gitkb/ (``util/``; ``store/cache/`` is a layer of its own, below the store) or a module
    at its top (``errors.py``; ``__init__.py`` is gitkb's own, the version)."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1].splitlines()[1:]  # after the opening fence's line
    rows = [line.split()[0] for line in block if line.strip()]
    return tuple(
        "gitkb" if row == "__init__.py" else row.removesuffix(".py").strip("/").replace("/", ".")
        for row in rows
    )


LAYERS = layers(DESIGN.read_text(encoding="utf-8"))
RANK = {package: n for n, package in enumerate(LAYERS)}


def _modules() -> list[tuple[str, str, ast.Module]]:
    """(path relative to the repository, gitkb package it belongs to, its syntax tree)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        package = package_of(("gitkb", *relative.with_suffix("").parts))
        out.append((f"gitkb/{relative}", package, ast.parse(path.read_text(), str(path))))
    return out


def package_of(dotted: tuple[str, ...] | list[str]) -> str:
    """The layer a module's dotted name (split) belongs to: ``gitkb.store.cache.rows`` ->
    ``store.cache``, ``gitkb.errors`` -> ``errors``, ``gitkb`` -> ``gitkb``."""
    parts = [p for p in dotted if p != "__init__"]
    if len(parts) == 1:
        return "gitkb"
    if parts[1:3] == ["store", "cache"]:
        return "store.cache"
    return parts[1]


def module_name(path: str) -> str:
    """``gitkb/store/view.py`` -> ``gitkb.store.view``; a package's __init__ is the package."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = _modules()


def _imports(modules) -> list[tuple[str, str, str, list[str]]]:
    """(path, package, module imported, names taken from it) for each import in
    ``modules``."""
    found = []
    for path, package, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(path, package, alias.name, []) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append((path, package, node.module, [a.name for a in node.names]))
    return found


def sql_outside_the_store(modules) -> list[str]:
    """SQL text, or a SQLite module imported, outside ``gitkb/store/``."""
    others = [(path, package, tree) for path, package, tree in modules
              if package not in ("store", "store.cache")]  # fmt: skip
    found = [
        f"{path}:{node.lineno}: {node.value[:50]!r}"
        for path, _, tree in others
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and SQL.search(node.value)
    ]  # fmt: skip
    return found + [f"{path}: imports {name}" for path, _, name, _ in _imports(others)
                    if name.split(".")[0] in ("sqlite3", "_sqlite3")]  # fmt: skip


def dulwich_outside_vcs(modules) -> list[str]:
    return [f"{path}: {name}" for path, package, name, _ in _imports(modules)
            if name.split(".")[0] == "dulwich" and package != "vcs"]  # fmt: skip


def _targets(name: str, taken: list[str], known: set[str]) -> list[str]:
    """The gitkb modules an import names: ``from gitkb.store import cache`` names the
    submodule ``gitkb.store.cache`` (not the package), ``from gitkb.store import Store`` the
    package ``gitkb.store``."""
    if name.split(".")[0] != "gitkb":
        return []
    submodules = [f"{name}.{t}" for t in taken if f"{name}.{t}" in known]
    whole = [name] if len(submodules) < len(taken) or not taken else []
    return whole + submodules


def higher_layers_imported(modules) -> list[str]:
    """Each gitkb import (at the top, in a function, for types) of a package not below the
    importer's own in ``LAYERS``; a package missing from ``LAYERS`` is a finding too."""
    known = {module_name(path) for path, _, _ in modules}
    found = [f"{path}: package {package!r} has no row in the layers (docs/design.md)"
             for path, package, _ in modules if package not in RANK]  # fmt: skip
    for path, package, name, taken in _imports(modules):
        if package not in RANK:
            continue
        for target in _targets(name, taken, known | {name}):
            other = package_of(target.split("."))
            if other != package and RANK.get(other, len(LAYERS)) >= RANK[package]:
                found.append(f"{path}: imports {target} ({other} is not below {package})")
    return found


def modules_importing_each_other(modules) -> list[str]:
    """Every import cycle among gitkb's modules (imports in functions and for types
    included): one line per cycle, its modules in order."""
    known = {module_name(path) for path, _, _ in modules}
    graph: dict[str, set[str]] = {m: set() for m in known}
    for path, _, name, taken in _imports(modules):
        here = module_name(path)
        graph[here] |= {t for t in _targets(name, taken, known) if t in known and t != here}
    cycles, done = [], set()
    for start in sorted(graph):
        # A depth-first walk from each module; a path back to ``start`` is a cycle.
        stack, seen = [(start, [start])], {start}
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start and not set(trail) & done:
                    cycles.append(" -> ".join([*trail, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
        done.add(start)
    return cycles


# What a function may import where it runs rather than at the top of its module: the heavy
# optional dependencies, gitkb's own heavy modules, and every gitkb module that loads one
# of them on import.
HEAVY = ("dulwich", "jsonschema", "mcp", "pydantic", "numpy", "torch", "triton")  # pydantic: mcp's
# The technique vocabulary compiles its patterns on import (a fifth of a read verb's
# imports); a reader's cache module imports it only to index a record.
HEAVY_OWN = ("gitkb.trace.techniques",)


def _top_level(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported (``if TYPE_CHECKING`` ones are not)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.Try):  # an optional dependency: try: import x
            found += [n for n in node.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return found


def _names(node: ast.Import | ast.ImportFrom) -> tuple[str, list[str]]:
    if isinstance(node, ast.Import):
        return node.names[0].name, []
    return node.module or "", [a.name for a in node.names]


def heavy_modules(modules) -> set[str]:
    """The gitkb modules that load a heavy dependency when imported (their parents'
    ``__init__`` run first, so those count)."""
    known = {module_name(path) for path, _, _ in modules}
    loads: dict[str, set[str]] = {}
    for path, _, tree in modules:
        here = module_name(path)
        parts = here.split(".")
        loads[here] = {".".join(parts[:n]) for n in range(1, len(parts))} & known
        if here in HEAVY_OWN:
            loads[here].add("!")
        for node in _top_level(tree):
            name, taken = _names(node)
            if name.split(".")[0] in HEAVY:
                loads[here].add("!")
            loads[here] |= {t for t in _targets(name, taken, known) if t in known}
    heavy = {m for m, targets in loads.items() if "!" in targets}
    while True:
        more = {m for m, targets in loads.items() if m not in heavy and targets & heavy}
        if not more:
            return heavy
        heavy |= more


def imports_inside_functions(modules) -> list[str]:
    """Each import a function makes of a module that is not heavy (``HEAVY``): it belongs at
    the top of its module, where the module's dependencies can be seen."""
    known = {module_name(path) for path, _, _ in modules}
    heavy = heavy_modules(modules)
    found = []
    for path, _, tree in modules:
        top = {id(n) for n in _top_level(tree)}
        guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test)
                   for n in ast.walk(node)}  # fmt: skip
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or id(node) in top | guarded:
                continue
            name, taken = _names(node)
            targets = _targets(name, taken, known) or [name]
            if name.split(".")[0] in HEAVY or all(t in heavy for t in targets):
                continue
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)} (not heavy: at the top)")
    return found


def private_names_taken(modules) -> list[str]:
    return [f"{path}: from {name} import {t}" for path, _, name, taken in _imports(modules)
            if name.split(".")[0] == "gitkb"
            for t in taken if t.startswith("_") and not t.startswith("__")]  # fmt: skip


MAX_LINES = 600  # a module that grows past this has two jobs


def long_modules(modules) -> list[str]:
    """Each module over ``MAX_LINES`` lines (its source as parsed: the last line's number)."""
    found = []
    for path, _, tree in modules:
        lines = max((getattr(n, "end_lineno", 0) or 0 for n in ast.walk(tree)), default=0)
        if lines > MAX_LINES:
            found.append(f"{path}: {lines} lines (at most {MAX_LINES})")
    return found


RULES = [sql_outside_the_store, dulwich_outside_vcs, higher_layers_imported,
         modules_importing_each_other, imports_inside_functions, private_names_taken,
         long_modules]  # fmt: skip


def test_the_rules_read_the_whole_package():
    """Every package under gitkb/ has its row in docs/design.md's layers, once, and every
    row names one."""
    packages = {package for _, package, _ in MODULES}
    assert len(MODULES) > 100 and packages == set(LAYERS) and len(LAYERS) == len(set(LAYERS))
    assert LAYERS[:3] == ("gitkb", "errors", "util") and "store.cache" in LAYERS


def test_the_layers_are_read_off_the_design_page():
    text = "## Layers\n\nBottom up.\n\n```text\n__init__.py  v\nutil/  x y\n\nstore/cache/\n"
    text += "cli.py  table\n```\n\nLater: `not/a_row`.\n\n## House rules\n\n```\nno/\n```\n"
    assert layers("# Design\n\n" + text) == ("gitkb", "util", "store.cache", "cli")


@pytest.mark.parametrize("rule", RULES, ids=[r.__name__ for r in RULES])
def test_the_package_keeps_the_rule(rule):
    """Only the store speaks SQL (a reader states what it wants as data and gets named
    rows back); only the VCS layer imports dulwich; a lower layer never imports a higher
    one and no two modules import each other; no module takes another's private names."""
    assert rule(MODULES) == []


BREACHES = {
    sql_outside_the_store: [
        ("gitkb/query/breach.py", "ROWS = 'SELECT id FROM records WHERE arch = ?'\n"),
    ],
    dulwich_outside_vcs: [("gitkb/store/breach.py", "from dulwich.repo import Repo\n")],
    # in a function: a lazy import is held to the layers all the same
    higher_layers_imported: [
        ("gitkb/store/breach.py", "def f():\n    from gitkb.query import answer\n"),
    ],
    modules_importing_each_other: [
        ("gitkb/store/ping.py", "def f():\n    from gitkb.store import pong\n"),
        ("gitkb/store/pong.py", "from gitkb.store.ping import f\n"),
    ],
    imports_inside_functions: [
        ("gitkb/query/breach.py", "def f():\n    import json\n    from dulwich import repo\n"),
    ],
    long_modules: [("gitkb/query/breach.py", "x = 1\n" * 601)],
    private_names_taken: [
        ("gitkb/query/breach.py", "from gitkb.store.cache.queries import _pattern\n"),
    ],
}  # fmt: skip


@pytest.mark.parametrize("rule", RULES, ids=[r.__name__ for r in RULES])
def test_each_rule_finds_its_breach(rule):
    modules = [(path, package_of(module_name(path).split(".")), ast.parse(source))
               for path, source in BREACHES[rule]]  # fmt: skip
    assert len(rule(modules)) == 1, rule(modules)


def test_a_package_without_a_layer_is_a_breach():
    module = ("gitkb/newpkg/breach.py", "newpkg", ast.parse("import os\n"))
    assert higher_layers_imported([module]) == [
        "gitkb/newpkg/breach.py: package 'newpkg' has no row in the layers (docs/design.md)"
    ]


def test_a_type_only_import_of_a_higher_layer_is_a_breach():
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gitkb.store import Store\n"
    )
    assert len(higher_layers_imported([("gitkb/vcs/breach.py", "vcs", ast.parse(source))])) == 1
