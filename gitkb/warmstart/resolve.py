"""``git kb resolve``: the best same-hardware code the store holds for a kernel.

Reads ``main`` through the VCS layer (a bare clone works, no checkout). The
store's index cache decides which records matter (the kernel names records file
code under, their type, status and scope), and only the same-arch, unretracted,
code-carrying candidates' record blobs and ledgers are loaded. A bad record (a
missing or corrupt object, a blob the cache did not expect) is skipped and
counted, never fatal; a path that is not a store is a hard miss (an error), so a
typo never cold-starts a run.
"""

from __future__ import annotations

from pathlib import Path

from gitkb import targets
from gitkb.errors import GitkbError, NotAStore, writing
from gitkb.store.layout import ledger_path
from gitkb.warmstart import curate
from gitkb.warmstart.attest import parse_ledger, retire_hint

DEFAULT_TOP_N = 3
DEFAULT_MIN_SPEEDUP = 1.05


def hardware_for(arch: str | None, product: str | None) -> targets.Hardware | None:
    """The caller's hardware: ``--product`` as a token of the target table, or ``--arch`` as a
    clean-1.3 arch or a token. Exact names only (a typo must not pick a near token); an
    unknown one is an error naming the known values."""
    if product:
        found = targets.table().get(product.strip().lower())
        if found is None:
            known = ", ".join(sorted(targets.table()))
            raise GitkbError(f"unknown hardware token {product!r}; known tokens: {known}", 2)
        return found
    if not arch:
        return None
    wanted = arch.strip().lower()
    if wanted in targets.arches():
        vendor = next(hw.vendor for hw in targets.table().values() if hw.arch == wanted)
        return targets.Hardware(vendor, wanted, None, wanted)
    found = targets.table().get(wanted)
    if found is None:
        raise GitkbError(
            f"unknown arch {arch!r}; known arches: {', '.join(sorted(targets.arches()))}; "
            f"known tokens: {', '.join(sorted(targets.table()))}",
            2,
        )
    return found


_KINDS = (*curate.CODE_TYPES, "anti-strategy")


def _rows(store, tip: str, kernel: str) -> tuple[curate.KernelMatch, list[tuple]]:
    """The kernel match over the names the store files code under, and the matched
    records' rows (id, type, status, vendor, arch, dsl, path, blob): from the index
    cache, so no record is read to choose."""
    with store.cache.snapshot(tip) as cache:
        by_canonical: dict[str, set[str]] = {}
        for name in cache.kernel_names():
            by_canonical.setdefault(curate.canonical_kernel(name), set()).add(name)
        match = curate.match_kernel(kernel, set(by_canonical))
        found = cache.kernel_rows(n for c in match.names for n in by_canonical.get(c, ()))
    rows = []
    for row in found:
        if row[1] is None:  # unreadable: where its folder files it, as a corrupt code record
            parts = row[6].split("/")
            rows.append((None, curate.CODE_TYPES[0], None, *parts[2:5], row[6], row[7], *row[8:]))
        elif row[1] in _KINDS and row[0] is not None:
            rows.append(row)
    return match, rows


def _open(store_path) -> object:
    from gitkb.store import Store

    try:
        return Store.open(store_path)
    except NotAStore as exc:
        raise GitkbError(f"resolve: {exc.message} (a warm start needs an existing store)") from None


def resolve(
    store_path,
    kernel: str,
    arch: str | None = None,
    product: str | None = None,
    top_n: int = DEFAULT_TOP_N,
    min_speedup: float = DEFAULT_MIN_SPEEDUP,
    include_retired: bool = False,
    dsl: str | None = None,
    out: str | None = None,
) -> dict:
    """The resolve answer (one JSON-ready dict); with ``out``, also the audit folder."""
    from gitkb.record import load

    if top_n < 1:
        raise GitkbError(f"--top-n must be at least 1, got {top_n}", 2)
    if not kernel or not kernel.strip():
        raise GitkbError("--kernel needs a kernel name or file", 2)
    hardware = hardware_for(arch, product)
    store = _open(store_path)
    tip = store.tip
    kernel_file = Path(kernel) if Path(kernel).is_file() else None
    answer: dict = {
        "read_reason": None,
        "store": str(store_path),
        "commit": tip,
        "kernel": {"query": kernel, "canonical": curate.canonical_kernel(kernel)},
        "hardware": None,
        "options": {
            "top_n": top_n,
            "min_speedup": min_speedup,
            "include_retired": include_retired,
            "dsl": dsl,
        },
        "counts": {
            "total": 0,
            "same_arch": 0,
            "other_arch": 0,
            "other_language": 0,
            "retired": 0,
            "below_floor": 0,
            "collapsed": 0,
            "beyond_top_n": 0,
            "no_code": 0,
            "corrupt": 0,
        },
        "other_arch_pages": [],
        "other_language_pages": [],
        "ranks": [],
        "out": None,
    }
    counts = answer["counts"]
    if hardware is None:
        answer["read_reason"] = "missing_arch"
        return answer
    answer["hardware"] = {
        "vendor": hardware.vendor,
        "arch": hardware.arch,
        "product": hardware.product,
        "token": hardware.token,
    }
    match, rows = _rows(store, tip, kernel)
    answer["kernel"].update(tier=match.tier, matched=sorted(match.names))
    if match.ambiguous:
        answer["kernel"]["ambiguous"] = match.ambiguous
        answer["read_reason"] = "ambiguous"
        return answer
    if match.tier is None:
        answer["read_reason"] = "kernel_not_found"
        return answer

    wanted: list[tuple] = []  # (row, retired) of the same-arch code records to load
    pitfall_paths: list[str] = []
    other_arch: dict[tuple, int] = {}
    other_language: dict[tuple, int] = {}
    same_arch_total = 0
    for row in rows:
        _, kind, status, vendor, record_arch, record_dsl, path, _ = row[:8]
        is_code = kind in curate.CODE_TYPES
        counts["total"] += is_code
        if record_arch != hardware.arch:
            if is_code:
                key = (vendor, record_arch, record_dsl)
                other_arch[key] = other_arch.get(key, 0) + 1
            continue
        if dsl and record_dsl not in (dsl, "any"):
            if is_code:
                key = (vendor, record_arch, record_dsl)
                other_language[key] = other_language.get(key, 0) + 1
            continue
        retired = status in curate.RETIRED_STATUSES
        if not is_code:
            if not retired:
                pitfall_paths.append(path)
            continue
        same_arch_total += 1
        if retired and not include_retired:
            counts["retired"] += 1
            continue
        wanted.append((row, retired))

    # Only now are record blobs read: the candidates' records and ledgers, in one pass.
    paths = [row[6] for row, _ in wanted] + [ledger_path(row[0]) for row, _ in wanted]
    blobs = store.view(tip).read_files(paths)
    candidates: list[curate.Candidate] = []
    for row, retired in wanted:
        candidate = _candidate(row, retired, blobs)
        if candidate is None:
            counts["corrupt"] += 1
        elif candidate == "no_code":
            counts["no_code"] += 1
        else:
            candidates.append(candidate)

    counts["same_arch"] = same_arch_total
    counts["other_arch"] = sum(other_arch.values())
    counts["other_language"] = sum(other_language.values())
    answer["other_arch_pages"] = _pages(other_arch)
    answer["other_language_pages"] = _pages(other_language)
    curated = curate.curate(candidates, min_speedup, top_n, include_retired)
    counts["below_floor"] = curated.below_floor
    counts["collapsed"] = curated.collapsed
    counts["beyond_top_n"] = curated.beyond_top_n
    answer["ranks"] = [
        _rank(n, c, curated.ranks[0].bench_key) for n, c in enumerate(curated.ranks, 1)
    ]
    answer["read_reason"] = _reason(answer, curated, same_arch_total)
    if out is not None:
        from gitkb.warmstart.references import write_out

        texts = store.view(tip).read_files(pitfall_paths)
        pitfalls = [load(p, raw).data for p, raw in texts.items()]
        with writing(out):
            write_out(Path(out), answer, curated.ranks, [p for p in pitfalls if p], kernel_file)
    return answer


def _candidate(row: tuple, retired: bool, blobs: dict):
    """The candidate a row names; None when its record is corrupt, 'no_code' when the
    record carries no code a run can use."""
    from gitkb.record import load

    record_id, path = row[0], row[6]
    raw = blobs.get(path)
    record = None if raw is None else load(path, raw).data
    if record is None or record.get("id") != record_id:
        return None
    try:
        if curate.code_of(record) is None:
            return "no_code"
        lpath = ledger_path(record_id)
        ledger = parse_ledger(lpath, blobs.get(lpath))
        counts = ledger.counts()
        if ledger.bad_lines:
            counts["unreadable_lines"] = len(ledger.bad_lines)
        return curate.Candidate(
            record_id=record_id,
            record=record,
            path=path,
            speedup=curate.speedup(record),
            bench_key=curate.bench_key(record),
            direction=curate.direction(record),
            reproductions=curate.reproductions(record),
            retired=retired,
            counts=counts,
            retire_hint=retire_hint(counts),
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def _pages(groups: dict[tuple, int]) -> list[dict]:
    return [
        {"vendor": vendor, "arch": arch, "dsl": dsl, "records": n}
        for (vendor, arch, dsl), n in sorted(groups.items(), key=lambda kv: str(kv[0]))
    ]


def _rank(number: int, candidate: curate.Candidate, first_key: str) -> dict:
    record = candidate.record
    scope = record["retrieval"]["scope"]
    return {
        "rank": number,
        "id": candidate.record_id,
        "type": record.get("type"),
        "speedup": candidate.speedup,
        "arch": scope.get("arch"),
        "dsl": scope.get("dsl"),
        "direction": candidate.direction,
        "techniques": list(record["retrieval"].get("technique_tags") or []),
        "bench_key": candidate.bench_key,
        "comparable": candidate.bench_key == first_key,
        "reproductions": candidate.reproductions,
        "attestations": candidate.counts,
        "retire_hint": candidate.retire_hint,
        "retired": candidate.retired,
        "record_path": candidate.path,
        "applies": None,
        "code_path": None,
        "prose_path": None,
        "alternates": [
            {
                "id": alt.record_id,
                "speedup": alt.speedup,
                "bench_key": alt.bench_key,
                "retire_hint": alt.retire_hint,
                "code_path": None,
            }
            for alt in candidate.alternates
        ],
    }


def _reason(answer: dict, curated: curate.Curated, same_arch_total: int) -> str:
    counts = answer["counts"]
    if curated.ranks:
        return "read"
    if same_arch_total == 0:
        return "no_same_arch" if not counts["other_language"] else "no_same_language"
    if counts["retired"] == same_arch_total:
        return "all_retired"
    if curated.below_floor:
        return "below_min_speedup"
    if counts["no_code"]:
        return "no_code"
    return "corrupt_records"
