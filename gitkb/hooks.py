"""What the hook shims run: the same gate registry as validate and admission."""

from __future__ import annotations

from pathlib import Path

from gitkb import record as rec
from gitkb.gates import GateContext, run_gates


def pre_commit(files: list[str]) -> list[str]:
    """Gate the staged record files (the pre-commit framework leaves exactly the staged
    content on disk); return one line per problem, empty when all pass."""
    from gitkb.gates.registry import record_level

    records = []
    for name in files:
        path = Path(name).as_posix()
        if not rec.is_record_path(path):
            continue
        try:
            raw = Path(name).read_bytes()
        except OSError as exc:
            return [f"{name}: {exc.strerror}"]
        records.append(rec.load(path, raw))
    if not records:
        return []
    results = run_gates(GateContext(records=records), record_level())
    return [f"{f.line()}" for r in results for f in r.findings]
