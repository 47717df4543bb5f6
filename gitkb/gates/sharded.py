"""The gates over a large records folder, its records split across processes.

Most gates judge each record by itself; reading and judging a GPU-wiki tree's 847
records is JSON-bound, and a machine with more than one core does it in a fraction of
the time on shards of the records, each in a forked process (the parent judges the
first). ``ids`` and ``index`` need every record: they run in the parent on stubs the
shards return (each record's path, id, retrieval and rank), which is all they read.
The results equal a serial run's: statuses merge (a finding anywhere fails the gate),
and findings keep the records' order because shards are contiguous runs of the same
sorted file list. Where ``fork`` is missing, or one core or few records, it is serial.
"""

from __future__ import annotations

import os
import pickle
from collections import Counter
from pathlib import Path

from gitkb import record as rec
from gitkb.gates import Finding, Gate, GateContext, GateResult, run_gates
from gitkb.gates.index import parsed_index

MIN_RECORDS = 300  # below this a fork costs more than it saves
# Parsing the index costs about a third of judging as many bytes of records (measured on
# the GPU-wiki store): the parent, which parses it, takes that much less of the records.
INDEX_BYTE_WEIGHT = 0.3
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


def _shards(paths: list[tuple[str, int]], count: int, head_start: int) -> list[list[str]]:
    """Contiguous runs of ``paths`` of about equal bytes; the first (the parent's) lighter
    by ``head_start`` bytes, the work it also does on the index."""
    total = sum(size for _, size in paths) + head_start
    shards: list[list[str]] = [[] for _ in range(count)]
    done, shard = head_start, 0
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


def run(folder: Path, gates: list[Gate], index_raw: bytes | None):
    """(record count, census line, results) of ``gates`` on the folder's records,
    ``index_raw`` its records/index.json bytes."""
    paths = record_paths(folder)
    count = min(workers(), max(1, len(paths) // (MIN_RECORDS // 2)))
    whole_gates = [g for g in gates if g.name in WHOLE_CONTEXT]
    indexed = any(g.name == "index" for g in whole_gates)
    index_work = int(len(index_raw or b"") * INDEX_BYTE_WEIGHT) if indexed else 0
    shards = _shards(paths, count, index_work)
    per_record = [g for g in gates if g.name not in WHOLE_CONTEXT]
    children = [_fork(folder, shard, per_record) for shard in shards[1:]]
    parts = [_judge(folder, shards[0], per_record)]
    whole_ctx = GateContext(records=[], index_raw=index_raw)
    if index_work:
        parsed_index(whole_ctx)  # while the other shards are still being judged
    parts += [_collect(*child) for child in children]
    whole_ctx.records = [stub for part in parts for stub in part["stubs"]]
    types = sum((part["types"] for part in parts), Counter())
    whole = {r.gate.name: r for r in run_gates(whole_ctx, whole_gates)}
    results = []
    for gate in gates:
        if gate.name in whole:
            results.append(whole[gate.name])
        else:
            results.append(_merge(gate, [part["results"][gate.name] for part in parts]))
    parts_text = ", ".join(f"{k}={v}" for k, v in sorted(types.items()))
    return len(paths), f"records: {len(paths)}  ({parts_text})", results


def _judge(folder: Path, shard: list[str], gates: list[Gate]) -> dict:
    files = [rec.load(path, (folder / path).read_bytes()) for path in shard]
    results = run_gates(GateContext(records=files), gates)
    return {
        "results": {
            r.gate.name: (r.status, r.reason, [tuple(f.__dict__.values()) for f in r.findings])
            for r in results
        },
        "stubs": [_stub(f) for f in files],
        "types": Counter(str(f.data.get("type")) if f.data else "unreadable" for f in files),
    }


def _stub(record_file: rec.RecordFile) -> rec.RecordFile:
    """What ``ids`` and ``index`` read of a record: its path, id, retrieval and rank."""
    data = record_file.data
    if data is None:
        return rec.RecordFile(record_file.path, b"", None, record_file.error)
    worth = data.get("worth") if isinstance(data.get("worth"), dict) else {}
    kept = {"id": data.get("id"), "retrieval": data.get("retrieval")}
    kept["worth"] = {k: worth[k] for k in ("rank", "gain") if k in worth}
    return rec.RecordFile(record_file.path, b"", kept)


def _fork(folder: Path, shard: list[str], gates: list[Gate]) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: judge the shard, send the outcome, leave without cleanup
        os.close(read_end)
        code = 0
        try:
            data = pickle.dumps(("ok", _judge(folder, shard, gates)))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
            data, code = pickle.dumps(("error", f"{type(exc).__name__}: {exc}")), 1
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        os._exit(code)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, read_end: int) -> dict:
    from gitkb.errors import GitkbError

    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data) if data else ("error", "the shard process died")
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
