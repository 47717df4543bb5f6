"""`git kb validate DIR` judges a large records folder in shards across processes; the
results are exactly a serial run's, defects and their order included."""

from __future__ import annotations

import os

import pytest
from helpers import needs_conformance

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.gates import run_gates, sharded
from gitkb.gates.registry import GATE_NAMES, all_gates
from gitkb.record.index import Index, index_entry
from gitkb.store.validation import folder_context, validate
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def write_folder(folder, count: int = 420):
    index = Index()
    for n in range(count):
        record = synthetic.strategy(n)
        if n % 50 == 7:
            record["payload"]["mechanism"] = "see /home/jdoe/notes.md for why"  # anonymization
        path = rec.path_for(record)
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(rec.dumps(record))
        if n % 60 != 11:  # some records have no index entry
            index.put(index_entry(record, path))
        if n % 97 == 3:  # a second copy of an id, filed elsewhere
            head, name = path.rsplit("/", 1)
            twin = folder / head / "twin" / name
            twin.parent.mkdir(parents=True, exist_ok=True)
            twin.write_bytes(rec.dumps(record))
    (folder / "records" / "broken.json").write_text("{not json")
    (folder / rec.RECORDS_DIR / "index.json").write_bytes(index.dumps())
    return folder


def lines(results):
    return [(r.gate.name, r.status, r.reason, [f.line() for f in r.findings]) for r in results]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_shards_give_the_serial_results(tmp_path, monkeypatch, workers):
    folder = write_folder(tmp_path / "wiki")
    serial = lines(run_gates(folder_context(folder), all_gates()))
    assert any(status == "FAIL" for _, status, _, _ in serial)
    monkeypatch.setattr(sharded, "workers", lambda: workers)
    done = validate(folder, GATE_NAMES)
    assert lines(done.results) == serial
    assert done.records == 420 + 5 + 1
    assert done.census.startswith("records: 426  (strategy=425, unreadable=1)")


def test_the_conformance_sample_validates_the_same_in_shards(monkeypatch):
    folder = needs_conformance()
    serial = lines(run_gates(folder_context(folder), all_gates()))
    monkeypatch.setattr(sharded, "workers", lambda: 2)
    monkeypatch.setattr(sharded, "MIN_RECORDS", 100)
    assert lines(validate(folder, GATE_NAMES).results) == serial


def test_a_failing_shard_is_one_clear_error(tmp_path, monkeypatch):
    folder = write_folder(tmp_path / "wiki")
    monkeypatch.setattr(sharded, "workers", lambda: 2)
    parent, real = os.getpid(), sharded._judge

    def judge(*args):
        if os.getpid() != parent:
            raise RuntimeError("disk on fire")
        return real(*args)

    monkeypatch.setattr(sharded, "_judge", judge)
    with pytest.raises(GitkbError, match="a shard of the records failed: RuntimeError: disk on"):
        validate(folder, GATE_NAMES)


def test_gate_names_are_their_modules_names():
    assert tuple(g.name for g in all_gates()) == GATE_NAMES
