"""The repository's own folders, and the shared conformance sample beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "gpu-wiki-sample"
EXAMPLES = ROOT / "templates" / "examples"
DATA = ROOT / "tests" / "data"  # recorded sample outputs the tests read


def example_files() -> list[Path]:
    return sorted((EXAMPLES / "records").rglob("*.json"))


def needs_conformance() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip("../shared/conformance is not present")
    return CONFORMANCE
