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
# package -> the gitkb packages it must not import (a lower layer never imports a higher).
LOWER_THAN = {
    "record": {"store", "gates", "trace", "mine", "warmstart", "query", "importers", "optimize",
               "commands", "hooks", "report", "vcs", "schema"},
    "vcs": {"record", "store", "gates", "trace", "mine", "warmstart", "query", "importers",
            "optimize", "commands", "hooks", "report"},
    "schema": {"store", "gates", "trace", "mine", "warmstart", "query", "optimize", "commands"},
    "trace": {"store", "gates", "mine", "warmstart", "query", "importers", "optimize",
              "commands"},
    "store": {"mine", "warmstart", "query", "importers", "optimize", "commands", "hooks",
              "report"},
    "gates": {"mine", "warmstart", "query", "importers", "optimize", "commands", "hooks"},
}  # fmt: skip


def _modules() -> list[tuple[str, str, ast.Module]]:
    """(path relative to the repository, gitkb package it belongs to, its syntax tree)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        package = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        out.append((f"gitkb/{relative}", package, ast.parse(path.read_text(), str(path))))
    return out


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
    others = [(path, package, tree) for path, package, tree in modules if package != "store"]
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


def higher_layers_imported(modules) -> list[str]:
    found = []
    for path, package, name, taken in _imports(modules):
        parts = name.split(".")
        if parts[0] != "gitkb" or package not in LOWER_THAN:
            continue
        # ``from gitkb import store`` names the package in what it takes
        targets = [parts[1]] if len(parts) > 1 else taken
        found += [f"{path}: {name} {t}" for t in targets if t in LOWER_THAN[package]]
    return found


def private_names_taken(modules) -> list[str]:
    return [f"{path}: from {name} import {t}" for path, _, name, taken in _imports(modules)
            if name.split(".")[0] == "gitkb"
            for t in taken if t.startswith("_") and not t.startswith("__")]  # fmt: skip


RULES = [sql_outside_the_store, dulwich_outside_vcs, higher_layers_imported,
         private_names_taken]  # fmt: skip


def test_the_rules_read_the_whole_package():
    packages = {package for _, package, _ in MODULES}
    assert len(MODULES) > 100 and set(LOWER_THAN) <= packages


@pytest.mark.parametrize("rule", RULES, ids=[r.__name__ for r in RULES])
def test_the_package_keeps_the_rule(rule):
    """Only the store speaks SQL (a reader states what it wants as data and gets named
    rows back); only the VCS layer imports dulwich; a lower layer never imports a higher
    one; no module takes another's private names."""
    assert rule(MODULES) == []


BREACHES = {
    sql_outside_the_store: ("query", "ROWS = 'SELECT id FROM records WHERE arch = ?'\n"),
    dulwich_outside_vcs: ("store", "from dulwich.repo import Repo\n"),
    higher_layers_imported: ("store", "from gitkb import warmstart\n"),
    private_names_taken: ("query", "from gitkb.store.cache.queries import _pattern\n"),
}


@pytest.mark.parametrize("rule", RULES, ids=[r.__name__ for r in RULES])
def test_each_rule_finds_its_breach(rule):
    package, source = BREACHES[rule]
    assert len(rule([(f"gitkb/{package}/breach.py", package, ast.parse(source))])) == 1
