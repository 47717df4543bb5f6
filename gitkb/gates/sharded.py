"""The gates over a large records folder, its records split across processes.

Most gates judge each record by itself; reading and judging a GPU-wiki tree's 847
records is JSON-bound, and a machine with more than one core does it in a fraction of
the time on shards of the records, each in a forked process (the parent judges the
first). ``ids`` and ``index`` need every record: the index file is judged as a whole in
the parent before the shards fork, each shard compares its records with the entries, and
``ids`` runs in the parent on the path and id of every record, which is all it reads.
The results equal a serial run's: statuses merge (a finding anywhere fails the gate),
and findings keep the records' order because shards are contiguous runs of the same
sorted file list. Where ``fork`` is missing, or one core or few records, it is serial.
"""

from __future__ import annotations

import os
import pickle
from collections import Counter
from pathlib import Path
from typing import Any

from gitkb import record as rec
from gitkb.errors import GitkbError
from gitkb.gates import Finding, Gate, GateContext, GateResult, run_gates
from gitkb.gates.index import disagreements, whole_index
from gitkb.gates.registry import by_name

MIN_RECORDS = 300  # below this a fork costs more than it saves
WHOLE_CONTEXT = ("ids", "index")


def record_paths(folder: Path) -> list[tuple[str, int]]:
    """(relative posix path, size) of the record files of ``folder``, in ``read_folder``'s
    order (symlinks are not followed or read)."""
    found = []
    root = os.path.join(str(folder), "")
    stack = [os.path.join(root, rec.RECORDS_DIR)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    relative = entry.path[len(root) :].replace(os.sep, "/")
                    if rec.is_record_path(relative):
                        found.append((relative, entry.stat(follow_symlinks=False).st_size))
    return sorted(found, key=lambda item: item[0].split("/"))


def _shards(paths: list[tuple[str, int]], count: int) -> list[list[str]]:
    """Contiguous runs of ``paths`` of about equal bytes."""
    total = sum(size for _, size in paths)
    shards: list[list[str]] = [[] for _ in range(count)]
    done, shard = 0, 0
    for path, size in paths:
        if shard < count - 1 and done >= total * (shard + 1) / count:
            shard += 1
        shards[shard].append(path)
        done += size
    return shards


def workers() -> int:
    if not hasattr(os, "fork"):
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def run(
    folder: Path, names: tuple[str, ...], index_raw: bytes | None
) -> tuple[int, str, list[GateResult]]:
    """(record count, census line, results) of the gates ``names`` on the folder's records,
    ``index_raw`` its records/index.json bytes. The shards fork before the gate modules
    load, so each process loads them at the same time."""
    paths = record_paths(folder)
    count = min(workers(), max(1, len(paths) // (MIN_RECORDS // 2)))
    index_found, by_id = whole_index(index_raw, len(paths)) if "index" in names else ([], None)
    shards = _shards(paths, count)
    per_record = tuple(n for n in names if n not in WHOLE_CONTEXT)
    children = [_fork(folder, shard, per_record, by_id) for shard in shards[1:]]
    parts = [_judge(folder, shards[0], per_record, by_id)]
    parts += [_collect(*child) for child in children]
    gates = by_name(names)
    stubs = [stub for part in parts for stub in part["stubs"]]
    whole = {r.gate.name: r for r in run_gates(GateContext(records=stubs), by_name(["ids"]))}
    if "index" in names:
        index_gate = next(g for g in gates if g.name == "index")
        whole["index"] = _merge(index_gate, [("PASS", "", _plain(index_found))] + [
            ("PASS", "", part["index"]) for part in parts
        ])  # fmt: skip
    types: Counter[str] = sum((part["types"] for part in parts), Counter())
    results = []
    for gate in gates:
        if gate.name in WHOLE_CONTEXT:
            results.append(whole[gate.name])
        else:
            results.append(_merge(gate, [part["results"][gate.name] for part in parts]))
    parts_text = ", ".join(f"{k}={v}" for k, v in sorted(types.items()))
    return len(paths), f"records: {len(paths)}  ({parts_text})", results


def _judge(folder: Path, shard: list[str], names: tuple[str, ...], by_id: dict | None) -> dict:
    files = [rec.load(path, (folder / path).read_bytes()) for path in shard]
    results = run_gates(GateContext(records=files), by_name(names))
    index: list[Finding] = []
    if by_id is not None:
        for f in files:
            if f.data is not None:
                index += disagreements(f.id, f.data, by_id.get(f.data.get("id")))
    return {
        "results": {r.gate.name: (r.status, r.reason, _plain(r.findings)) for r in results},
        "index": _plain(index),
        "stubs": [_stub(f) for f in files],
        "types": Counter(str(f.data.get("type")) if f.data else "unreadable" for f in files),
    }


def _plain(findings: list[Finding]) -> list[tuple]:
    return [tuple(f.__dict__.values()) for f in findings]


def _stub(record_file: rec.RecordFile) -> rec.RecordFile:
    """What ``ids`` reads of a record: its path and id."""
    data = record_file.data
    if data is None:
        return rec.RecordFile(record_file.path, b"", None, record_file.error)
    return rec.RecordFile(record_file.path, b"", {"id": data.get("id")})


def _fork(
    folder: Path, shard: list[str], names: tuple[str, ...], by_id: dict | None
) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: judge the shard, send the outcome, leave without cleanup
        os.close(read_end)
        code = 0
        try:
            data = pickle.dumps(("ok", _judge(folder, shard, names, by_id)))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
            data, code = pickle.dumps(("error", f"{type(exc).__name__}: {exc}")), 1
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        os._exit(code)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, read_end: int) -> dict:
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    outcome: tuple[str, Any] = pickle.loads(data) if data else ("error", "the shard process died")
    kind, value = outcome
    if kind != "ok":
        raise GitkbError(f"validating a shard of the records failed: {value}")
    return value


def _merge(gate: Gate, parts: list[tuple[str, str, list[tuple]]]) -> GateResult:
    findings = [Finding(*values) for _, _, found in parts for values in found]
    ran = [status for status, _, _ in parts if status != "SKIP"]
    if findings:
        return GateResult(gate, "FAIL", "", findings)
    if ran:
        return GateResult(gate, "PASS", "", [])
    return GateResult(gate, "SKIP", parts[0][1], [])
