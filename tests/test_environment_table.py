"""The environment table of docs/configuration.md names every GITKB_* variable the code reads
or sets."""

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
    page = (ROOT / "docs" / "configuration.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `GITKB_")]
    return {name for row in rows for name in VARIABLE.findall(row.split("|")[1])}


def test_every_variable_in_the_code_is_in_the_configuration_table():
    code, table = _in_code(), _in_table()
    assert len(code) >= 18
    assert code - table == set(), "add these to the table in docs/configuration.md"
    assert table - code == set(), "docs/configuration.md's table names unused variables"
