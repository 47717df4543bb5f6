"""The documents live in the project: a short README, and no file that cites a design
document outside the repository. Every docs/ page the code cites exists."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import ROOT

# Where citations live: the code, its tests and benches, and what ships beside them.
FOLDERS = ("gitkb", "tests", "bench", "hooks", "templates", "targets", "schema")
FILES = ("pyproject.toml", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml", ".ci/run")
# The design documents the project was written from, which are not in the repository.
OUTSIDE = re.compile(r"DESIGN\.md|TRACE_FORMAT|RECORD_FORMAT|WARM_START\.md|OPTIMIZER\.md|specs/")
# A citation of a page: followed by a section (§4), a rule, a quoted heading or a ")".
DOCS_PAGE = re.compile(r"\bdocs/([a-z0-9-]+\.md)(?=\s*§|,\s*(?:rules?\b|\"|§)|\))")


def _project_files() -> list[Path]:
    found = [ROOT / name for name in FILES if (ROOT / name).is_file()]
    for folder in FOLDERS:
        found += [
            p
            for p in sorted((ROOT / folder).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        ]
    return found


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def test_the_readme_stays_short() -> None:
    assert len(_text(ROOT / "README.md").splitlines()) <= 150


def test_no_project_file_cites_a_document_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _project_files()
        if path.resolve() != this
        for number, line in enumerate(_text(path).splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == [], "cite the docs/ page instead"


def test_every_docs_page_the_project_cites_exists() -> None:
    this = Path(__file__).resolve()
    pages = {
        name
        for path in _project_files()
        if path.resolve() != this
        for name in DOCS_PAGE.findall(_text(path))
    }
    assert {"trace-format.md", "record-format.md", "warm-start.md"} <= pages
    assert sorted(p for p in pages if not (ROOT / "docs" / p).is_file()) == []


def test_the_checks_catch_an_outside_citation() -> None:
    assert OUTSIDE.search("# TRACE_FORMAT §4.3: merge rules")
    assert OUTSIDE.search('"""The rules (DESIGN.md, "What a push may change")."""')
    assert not OUTSIDE.search("# docs/trace-format.md §4.3: merge rules")
    assert DOCS_PAGE.findall("see docs/no-such-page.md §2") == ["no-such-page.md"]
    assert DOCS_PAGE.findall('(docs/warm-start.md, "Outcomes")') == ["warm-start.md"]
    assert DOCS_PAGE.findall('"ported from docs/x.md"') == []  # data, not a citation
