"""``git kb resolve``: the best same-page code the store holds for a kernel.

A page is GEAK's: one kernel, one product (a gfx id, an NVIDIA product; the GPU
a record states it was measured on wins over the folder it is filed in) and
one language (HIP and CK keep theirs, though clean-1.3's dsl enum cannot name
them). Reads ``main`` through the VCS layer (a bare clone works, no checkout).
The store's index cache decides which records matter and how they rank (the
kernel names records file code under, their type, status, scope, product,
measured GPU and language, and the curation facts of ``gitkb.record.curation``),
so only the records served (ranks, alternates, reference only; with a kernel
file, every candidate above the floor, to try its diff) and their ledgers are
read, each checked against main's tree. A bad record (a missing or corrupt
object) is skipped and counted, never fatal;
a path that is not a store is a hard miss (an error), so a typo never
cold-starts a run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gitkb import targets
from gitkb.errors import GitkbError, echoed, writing
from gitkb.layout import ledger_path
from gitkb.record import load
from gitkb.record.curation import CODE_TYPES, code_of, curation_facts
from gitkb.store.cache.index_cache import IndexCache
from gitkb.store.cache.rows import KernelRow
from gitkb.store.cache.source import Lie
from gitkb.store.store import Store
from gitkb.store.view import StoreView
from gitkb.warmstart import curate, geak, inline
from gitkb.warmstart.attest import parse_ledger, retire_hint
from gitkb.warmstart.references import apply_diff, write_geak_out, write_out

DEFAULT_TOP_N = 3
DEFAULT_MIN_SPEEDUP = 1.05
_KINDS = (*CODE_TYPES, "anti-strategy")


def _token(text: str) -> targets.Hardware | None:
    """A hardware token exactly as the table spells it (a typo must not pick a near token),
    or a gfx id, known or not, read GEAK's way too (``gfx90`` is the gfx90a page;
    ``gfx942:sramecc+:xnack-`` is gfx942)."""
    wanted = text.strip().lower()
    found = targets.table().get(wanted)
    gfx = targets.leading_gfx(wanted) if found is None else None
    if gfx is not None:
        found = geak.page_for_gfx(gfx)
    return found


def hardware_for(arch: str | None, product: str | None) -> targets.Hardware | None:
    """The caller's hardware: ``--product`` as a token of the target table (or a gfx id), or
    ``--arch`` as a clean-1.3 arch or a token. A token with a page matches records of that
    page only; a bare arch matches the arch's records of every product. An unknown name is
    an error naming the known values."""
    if product:
        found = _token(product)
        if found is None:
            known = ", ".join(sorted(targets.table()))
            raise GitkbError(f"unknown hardware token {echoed(product)}; known tokens: {known}", 2)
        return found
    if not arch:
        return None
    wanted = arch.strip().lower()
    if wanted in targets.arches():
        vendors = sorted(targets.vendors_of(wanted))
        if len(vendors) > 1:
            products = sorted(t for t, hw in targets.table().items() if hw.arch == wanted)
            raise GitkbError(
                f"arch {echoed(arch)} names hardware of several vendors ({', '.join(vendors)}); "
                f"name the hardware with --product ({', '.join(products)})",
                2,
            )
        return targets.Hardware(vendors[0], wanted, None, wanted)
    found = _token(wanted)
    if found is None:
        raise GitkbError(
            f"unknown arch {echoed(arch)}; known arches: {', '.join(sorted(targets.arches()))}; "
            f"known tokens: {', '.join(sorted(targets.table()))}",
            2,
        )
    return found


def language_for(kernel: str, dsl: str | None) -> tuple[str | None, str | None]:
    """The page's language and what said so: ``--dsl`` (``any``: every language), else the
    kernel's name (``triton_rmsnorm.py``, ``rmsnorm.hip``); None when nothing does."""
    if dsl is None or not dsl.strip():
        stated = curate.kernel_language(kernel)
        return stated, "kernel name" if stated else None
    wanted = dsl.strip().lower()
    if wanted == curate.ANY_LANGUAGE:
        return None, "--dsl"
    if wanted not in curate.LANGUAGES:
        known = ", ".join((*curate.LANGUAGES, curate.ANY_LANGUAGE))
        raise GitkbError(f"unknown --dsl {echoed(dsl)}; known languages: {known}", 2)
    return wanted, "--dsl"


def _rows(store: Store, tip: str, kernel: str, hardware: targets.Hardware,
          language: str | None) -> tuple[curate.KernelMatch, list[KernelRow]]:  # fmt: skip
    """The kernel match and the matched records' rows: from the index cache, so no record
    is read to choose. The tiers run per page, as GEAK's do: among the kernels with code
    filed on the caller's page and language only, so a same-named kernel elsewhere never
    makes the match ambiguous; failing that, among every kernel, to name the pages it is on."""
    with store.cache.snapshot(tip) as cache:
        by_canonical = cache.remembered(("kernels_by_canonical",),
                                        lambda: _by_canonical(cache.kernel_names()))  # fmt: skip
        related = curate.related_names(kernel, set(by_canonical))
        rows_of = {c: _kernel_rows(cache, c, by_canonical[c]) for c in sorted(related)}
    on_page = {
        c for c, rows in rows_of.items() if any(_filed_on(hardware, language, r) for r in rows)
    }
    match = curate.match_kernel(kernel, on_page)
    if match.tier is not None:
        match.on_page = True
    elif not match.ambiguous:
        match = curate.match_kernel(kernel, related)
        if match.ambiguous:  # only off the page: GEAK reads no page for it
            match = curate.KernelMatch(None)
    seen, rows = set(), []
    for c in sorted(match.names):
        for row in rows_of.get(c, ()):
            if row.path not in seen:
                seen.add(row.path)
                rows.append(row)
    return match, rows


def _kernel_rows(cache: IndexCache, canonical: str, names: frozenset[str]) -> list[KernelRow]:
    """The usable rows filed under ``names`` (one canonical kernel's): a fact of the commit,
    kept while the cache holds it, so a server resolving one kernel again and again turns
    its rows into Python once."""
    return cache.remembered(("kernel_rows", canonical),
                            lambda: _usable(cache.kernel_rows(names)))  # fmt: skip


def _by_canonical(names: list[str]) -> dict[str, frozenset[str]]:
    """The store's kernel names by canonical name (one commit's fact, kept while the cache
    holds it: a server resolving again and again canonicalizes them once)."""
    found: dict[str, set[str]] = {}
    for name in names:
        found.setdefault(curate.canonical_kernel(name), set()).add(name)
    return {canonical: frozenset(held) for canonical, held in found.items()}


def _filed_on(hardware: targets.Hardware, language: str | None, row: KernelRow) -> bool:
    """Whether a code row is filed on the caller's page and language (GEAK's page folder)."""
    if row.type not in CODE_TYPES:
        return False
    page = curate.page_of(row.product, None) or curate.page_of(None, row.measured)
    if not _on_page(hardware, row.vendor, row.arch, page):
        return False
    return not language or (row.language or curate.ANY_LANGUAGE) == language


def _usable(found: list[KernelRow]) -> list[KernelRow]:
    """Rows of the record kinds resolve reads; a corrupt record's row is rebuilt from its
    path so it is counted where it is filed."""
    rows = []
    for row in found:
        if row.type is None:
            # Unreadable: a corrupt code record where its folder and file name file it.
            parts = row.path.split("/")
            named = parts[-1].split(".")
            product = named[1] if len(named) > 2 else None
            vendor, arch, dsl = parts[2:5]
            rows.append(KernelRow(None, CODE_TYPES[0], None, vendor, arch, dsl, row.path,
                                  row.blob, product, None, dsl))  # fmt: skip
        elif row.type in _KINDS and row.id is not None:
            rows.append(row)
    return rows


def _answer(store: Store, tip: str, kernel: str, top_n: int, min_speedup: float,
            include_retired: bool, dsl: str | None, source: str | None) -> dict:  # fmt: skip
    return {
        "read_reason": None,
        "store": store.where,
        "commit": tip,
        "kernel": {"query": kernel, "canonical": curate.canonical_kernel(kernel)},
        "hardware": None,
        "options": {
            "top_n": top_n,
            "min_speedup": min_speedup,
            "include_retired": include_retired,
            "dsl": dsl,
            "dsl_from": source,
        },
        "counts": dict.fromkeys(
            (
                "total",
                "same_arch",
                "other_arch",
                "other_product",
                "other_language",
                "retired",
                "below_floor",
                "reference_only",
                "collapsed",
                "beyond_top_n",
                "no_code",
                "corrupt",
                "mislabeled",
            ),
            0,
        ),
        "other_arch_pages": [],
        "other_language_pages": [],
        "ranks": [],
        "reference_only": [],
        "out": None,
    }


def resolve(
    store: Store,
    kernel: str,
    arch: str | None = None,
    product: str | None = None,
    top_n: int = DEFAULT_TOP_N,
    min_speedup: float = DEFAULT_MIN_SPEEDUP,
    include_retired: bool = False,
    dsl: str | None = None,
    out: str | None = None,
    shape: str = "gitkb",
) -> dict:
    """The resolve answer (one JSON-ready dict); with ``out``, also the audit folder.
    ``shape`` "geak": GEAK's answer (``warmstart/geak.py``), ``out`` laid out as its lane
    reads it (``kb_artifacts/`` entries and ``kb_references/``). "inline": the code and
    references in the answer itself (``warmstart/inline.py``), no file read or written:
    ``kernel`` is only a name then, never a file to fit diffs to."""
    if shape == "inline" and out is not None:
        raise GitkbError("an inline resolve answer writes no --out folder", 2)
    if top_n < 1:
        raise GitkbError(f"--top-n must be at least 1, got {top_n}", 2)
    if not kernel or not kernel.strip():
        raise GitkbError("--kernel needs a kernel name or file", 2)
    hardware = hardware_for(arch, product)
    language, source = language_for(kernel, dsl)
    # Every file it reads is main's (checked against main's tree); a cache caught lying
    # is rebuilt and the kernel resolved again.
    return store.asked(lambda: _resolve(store, kernel, hardware, language, source, top_n,
                                        min_speedup, include_retired, out, shape))  # fmt: skip


def _resolve(store: Store, kernel: str, hardware: targets.Hardware | None, language: str | None,
             source: str | None, top_n: int, min_speedup: float, include_retired: bool,
             out: str | None, shape: str) -> dict:  # fmt: skip
    tip = store.tip
    kernel_file = None if shape == "inline" else _file(kernel)
    answer = _answer(store, tip, kernel, top_n, min_speedup, include_retired, language,
                     source)  # fmt: skip
    counts = answer["counts"]
    if hardware is None:
        answer["read_reason"] = "missing_arch"
        return _shaped(answer, shape, [], language, out)
    answer["hardware"] = {
        "vendor": hardware.vendor,
        "arch": hardware.arch,
        "product": hardware.product,
        "page": hardware.page,
        "token": hardware.token,
    }
    match, rows = _rows(store, tip, kernel, hardware, language)
    answer["kernel"].update(tier=match.tier, matched=sorted(match.names), on_page=match.on_page)
    if match.ambiguous:
        answer["kernel"]["ambiguous"] = match.ambiguous
        answer["read_reason"] = "ambiguous"
        return _shaped(answer, shape, [], language, out)
    if match.tier is None:
        answer["read_reason"] = "kernel_not_found"
        return _shaped(answer, shape, [], language, out)

    wanted: list[tuple[KernelRow, bool, str | None]] = []  # the same-page code records to load
    pitfall_paths: list[str] = []
    other_pages: dict[tuple, int] = {}
    other_language: dict[tuple, int] = {}
    same_page_total = 0
    for row in rows:
        kind, status, vendor, record_arch, path = (row.type, row.status, row.vendor, row.arch,
                                                   row.path)  # fmt: skip
        record_language = row.language or curate.ANY_LANGUAGE
        filed, stated = curate.page_of(row.product, None), curate.page_of(None, row.measured)
        page = stated or filed
        is_code = kind in CODE_TYPES
        counts["total"] += is_code
        if filed and stated and filed != stated:
            # Measured on one page, filed on another: GEAK serves it on neither.
            counts["mislabeled"] += is_code
            continue
        key = (vendor, record_arch, page, record_language)
        if not _on_page(hardware, vendor, record_arch, page):
            if is_code:
                other_pages[key] = other_pages.get(key, 0) + 1
                counts["other_arch" if record_arch != hardware.arch else "other_product"] += 1
            continue
        if language and record_language != language:
            if is_code:
                other_language[key] = other_language.get(key, 0) + 1
                counts["other_language"] += 1
            if is_code or record_language != curate.ANY_LANGUAGE:
                continue
        retired = status in curate.RETIRED_STATUSES
        if not is_code:
            if not retired:
                pitfall_paths.append(path)
            continue
        same_page_total += 1
        if retired and not include_retired:
            counts["retired"] += 1
            continue
        wanted.append((row, retired, page))

    candidates = _candidates(wanted, counts)
    counts["same_arch"] = same_page_total
    answer["other_arch_pages"] = _pages(other_pages)
    answer["other_language_pages"] = _pages(other_language)
    fits = _fits(kernel_file) if shape != "geak" else None  # GEAK never sets code aside
    view = store.view(tip)
    if fits is not None:  # whether a candidate's diff applies needs its code: read them first
        _read(view, [c for c in candidates if curate.eligible(c, min_speedup, include_retired)])
    curated = curate.curate(candidates, min_speedup, top_n, include_retired, fits)
    _read(view, [s for c in (*curated.ranks, *curated.reference_only) for s in (c, *c.alternates)])
    counts["below_floor"] = curated.below_floor
    counts["reference_only"] = len(curated.reference_only)
    counts["collapsed"] = curated.collapsed
    counts["beyond_top_n"] = curated.beyond_top_n
    first_key = curated.ranks[0].bench_key if curated.ranks else None
    answer["ranks"] = [_rank(n, c, first_key) for n, c in enumerate(curated.ranks, 1)]
    answer["reference_only"] = [_reference(c, kernel_file) for c in curated.reference_only]
    answer["read_reason"] = _reason(answer, curated, same_page_total)
    answer["geak_keys"] = geak.page_keys(candidates)
    if shape == "geak":
        return _shaped(answer, shape, curated.ranks, language, out)
    if shape == "inline":
        pitfalls = [load(p, raw).data for p, raw in view.read_checked(pitfall_paths).items()]
        inline.attach(answer, curated.ranks, curated.reference_only, [p for p in pitfalls if p])
        return answer
    if out is not None:
        texts = view.read_checked(pitfall_paths)
        pitfalls = [load(p, raw).data for p, raw in texts.items()]

        with writing(out):
            write_out(
                Path(out),
                answer,
                curated.ranks,
                curated.reference_only,
                [p for p in pitfalls if p],
                kernel_file,
            )
    return answer


def _shaped(answer: dict, shape: str, ranks: list[curate.CodeRecord], language: str | None,
            out: str | None) -> dict:  # fmt: skip
    """``answer`` in the shape asked for; GEAK's writes its ``--out`` tree first."""
    if shape != "geak":
        return answer
    if out is None or not ranks:
        return geak.answer(answer, ranks, language, "", [""] * len(ranks))

    with writing(out):
        root, prose = write_geak_out(Path(out), answer, ranks)
    return geak.answer(answer, ranks, language, str(root), prose)


def _on_page(hardware: targets.Hardware, vendor: str | None, arch: str | None,
             page: str | None) -> bool:  # fmt: skip
    """Whether a record measured on ``page`` (filed under ``vendor``/``arch``) is on the
    caller's page: the same product page when the caller names one (a record naming no
    product is not known to match), else the same vendor and arch."""
    if hardware.page:
        return page == hardware.page
    return arch == hardware.arch and vendor == hardware.vendor


def _file(path: str) -> Path | None:
    """``path`` when it names a file (the caller's kernel source), else None."""
    if not os.path.isfile(path):
        return None

    return Path(path)


def _fits(kernel_file: Path | None) -> Callable[[curate.CodeRecord], bool | None] | None:
    """Whether a candidate's code fits the caller's kernel file: a strategy whose diff does
    not apply there is reference only; None (no verdict) without a kernel file."""
    if kernel_file is None:
        return None

    source = kernel_file.read_text(encoding="utf-8", errors="replace")

    def fits(candidate: curate.CodeRecord) -> bool | None:
        kind, text = code_of(candidate.record)
        return apply_diff(text, source) is not None if kind == "diff" else None

    return fits


def _candidates(wanted: list[tuple[KernelRow, bool, str | None]],
                counts: dict) -> list[curate.CodeRecord]:  # fmt: skip
    """The candidates of the same-page code rows (row, retired, page), from the cache's
    curation columns: no record is read to choose. A row whose record does not read
    counts as corrupt, one carrying no code a run can use as no_code."""
    candidates = []
    for row, retired, page in wanted:
        if row.curation is None:
            counts["corrupt"] += 1
        elif row.curation.code is None:
            counts["no_code"] += 1
        else:
            language = row.language or curate.ANY_LANGUAGE
            candidates.append(curate.CodeRecord(row.id, row.path, row.curation, retired,
                                                page=page, language=language))  # fmt: skip
    return candidates


def _read(view: StoreView, served: list[curate.CodeRecord]) -> None:
    """Read the records (and ledgers) of the candidates served, each file main's (checked
    against main's tree). A record that is not what its cache row said (it does not read,
    or its facts differ) is the cache lying: ``Store.asked`` rebuilds it and asks again."""
    unread = [c for c in served if c.loaded is None]
    if not unread:
        return

    paths = [c.path for c in unread] + [ledger_path(c.record_id) for c in unread]
    blobs = view.read_checked(paths)
    for candidate in unread:
        raw = blobs.get(candidate.path)
        record = None if raw is None else load(candidate.path, raw).data
        if (record is None or record.get("id") != candidate.record_id
                or curation_facts(record) != candidate.facts):  # fmt: skip
            raise Lie(f"the index cache's row of {candidate.path} is not its record")
        lpath = ledger_path(candidate.record_id)
        ledger = parse_ledger(lpath, blobs.get(lpath))
        tally = ledger.counts()
        if ledger.bad_lines:
            tally["unreadable_lines"] = len(ledger.bad_lines)
        candidate.loaded = record
        candidate.counts = tally
        candidate.retire_hint = retire_hint(tally)


def _pages(groups: dict[tuple, int]) -> list[dict]:
    return [
        {"vendor": vendor, "arch": arch, "product": page, "language": language, "records": n}
        for (vendor, arch, page, language), n in sorted(groups.items(), key=lambda kv: str(kv[0]))
    ]


def _rank(number: int, candidate: curate.CodeRecord, first_key: str | None) -> dict:
    record = candidate.record
    scope = record["retrieval"]["scope"]
    return {
        "rank": number,
        "id": candidate.record_id,
        "type": record.get("type"),
        "speedup": candidate.speedup,
        "arch": scope.get("arch"),
        "product": candidate.page,
        "dsl": scope.get("dsl"),
        "language": candidate.language,
        "direction": candidate.direction,
        "techniques": list(record["retrieval"].get("technique_tags") or []),
        "bench_key": candidate.bench_key,
        "comparable": curate.comparable(candidate.bench_key, first_key),
        "reproductions": candidate.reproductions,
        "attestations": candidate.counts,
        "retire_hint": candidate.retire_hint,
        "retired": candidate.retired,
        "geak_keys": geak.keys_of(candidate),
        "record_path": candidate.path,
        "applies": candidate.applies,
        "code_path": None,
        "prose_path": None,
        "alternates": [
            {
                "id": alt.record_id,
                "speedup": alt.speedup,
                "bench_key": alt.bench_key,
                "comparable": curate.comparable(alt.bench_key, first_key),
                "retire_hint": alt.retire_hint,
                "applies": alt.applies,
                "code_path": None,
            }
            for alt in candidate.alternates
        ],
    }


def _reference(candidate: curate.CodeRecord, kernel_file: Path | None) -> dict:
    """A candidate listed for its prose only: its code does not fit the caller's kernel."""
    name = kernel_file.name if kernel_file else "the kernel"
    return {
        "id": candidate.record_id,
        "type": candidate.record.get("type"),
        "speedup": candidate.speedup,
        "direction": candidate.direction,
        "bench_key": candidate.bench_key,
        "retire_hint": candidate.retire_hint,
        "reason": f"its diff does not apply to {name}",
        "record_path": candidate.path,
        "prose_path": None,
    }


def _reason(answer: dict, curated: curate.Curated, same_page_total: int) -> str:
    counts = answer["counts"]
    if curated.ranks:
        return "read"
    if same_page_total == 0:
        return "no_same_arch" if not counts["other_language"] else "no_same_language"
    if counts["retired"] == same_page_total:
        return "all_retired"
    if curated.reference_only:
        return "reference_only"
    if curated.below_floor:
        return "below_min_speedup"
    if counts["no_code"]:
        return "no_code"
    return "corrupt_records"
