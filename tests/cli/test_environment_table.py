"""The README's environment table names every GITKB_* variable the code reads or sets."""

from __future__ import annotations

import re

from helpers import ROOT

VARIABLE = re.compile(r"\bGITKB_[A-Z0-9_]*[A-Z0-9]\b")


def _in_code() -> set[str]:
    found: set[str] = set()
    constants: set[str] = set()  # Python names that merely look like variables
    for folder in ("gitkb", "hooks", "bench"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in ("", ".py", ".sh"):
                text = path.read_text(errors="replace")
                found |= set(VARIABLE.findall(text))
                constants |= set(re.findall(r"^(GITKB_\w+) = ", text, re.M))
    return found - constants


def _in_table() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| `GITKB_")]
    return {name for row in rows for name in VARIABLE.findall(row.split("|")[1])}


def test_every_variable_in_the_code_is_in_the_readme_table():
    code, table = _in_code(), _in_table()
    assert len(code) >= 18
    assert code - table == set(), "add these to the README's environment table"
    assert table - code == set(), "the README's environment table names unused variables"
