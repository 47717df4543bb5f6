"""The hardware tables: ``targets/hardware.json`` is the TOML tables compiled (regenerate it
with ``python -m gitkb.targets``), and a copy that no longer matches its TOML is never
read."""

from __future__ import annotations

import dataclasses
import json
import shutil

from gitkb import targets
from gitkb.util import resources


def test_the_compiled_tables_are_the_toml_tables_now():
    path = resources.data_dir("targets") / targets.COMPILED
    fresh = targets.compile_tables(targets._sources())
    assert path.read_text() == targets.compiled_text(fresh), "run: python -m gitkb.targets"
    assert json.loads(path.read_text()) == fresh


def test_a_stale_copy_is_read_from_its_toml(tmp_path, monkeypatch):
    root = tmp_path / "targets"
    shutil.copytree(resources.data_dir("targets"), root)
    toml = root / "nvidia" / "hardware.toml"
    added = '[tokens]\n"h300" = { arch = "hopper", product = "h300" }\n'
    toml.write_text(toml.read_text().replace("[tokens]\n", added))
    monkeypatch.setattr(targets, "data_path", lambda kind: str(root))
    targets._tables.cache_clear()
    try:
        found = targets.lookup("NVIDIA H300 80GB")
        assert found is not None and (found.arch, found.product) == ("hopper", "h300")
        (root / targets.COMPILED).write_text("not json")
        targets._tables.cache_clear()
        assert targets.lookup("h300") == found
        assert targets.vendor_of("hopper") == "nvidia"
    finally:
        targets._tables.cache_clear()


def test_compiled_and_parsed_tables_answer_alike():
    parsed = targets.compile_tables(targets._sources())["tables"]
    for section, tokens in parsed.items():
        table = targets._tables()[section]
        assert list(table) == list(tokens)  # the order lookup's ties follow
        for token, fields in tokens.items():
            assert list(dataclasses.astuple(table[token])) == fields
