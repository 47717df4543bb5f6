"""resolve chooses from the index cache's curation columns and reads only what it serves:
its answer (and its ``--out`` tree) is byte for byte the one the full-parse rule gives,
the rule resolve had before the columns: every same-page candidate's record and
ledger read and parsed, its facts taken from the parsed record.

The store is varied on purpose: ties broken by reproductions, by GEAK's exp id and by
the id; folded and unstated directions; stated, null, case-made and missing bench keys;
speedups from a stated number, a numeric string, the headline gain (either direction),
the geomeans, or nowhere; retired records, records without usable code, a record that is
not JSON, a reference kernel, a pitfall; several arches, products and languages; GEAK
imports with their exp ids, kernel names and ROCm; ledgers with attestations and a bad
line. resolve folds no feedback (``feedback/``), so none is written."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gitkb import record as rec
from gitkb import targets
from gitkb.layout import ledger_path
from gitkb.record.curation import code_of, curation_facts
from gitkb.store import Store
from gitkb.store.writer import Change
from gitkb.testing import synthetic
from gitkb.warmstart import curate, geak, resolve
from gitkb.warmstart.attest import parse_ledger, retire_hint

KERNEL_SOURCE = "def k(x, m):\n    y = tl.exp(x - m)\n    return y\n"
APPLIES = "-    y = tl.exp(x - m)\n+    y = tl.exp2((x - m) * 1.4427)\n"
DOES_NOT_APPLY = "-    z = x * 2\n+    z = x + x\n"


def _record(n: int, product: str = "h100", kernel: str = "softmax", dsl: str = "triton",
            pct: float | None = 20.0, **changes) -> dict:  # fmt: skip
    """A code record for ``kernel`` on ``product``; ``changes``: dotted path -> value (None
    deletes the field)."""
    hw = targets.require(product)
    record = copy.deepcopy(synthetic.strategy(0))
    record["id"] = f"{hw.vendor}.{product}.{dsl}.{kernel}.step-{n}-s{n:02d}"
    record["episode_key"] = f"{hw.arch}|{dsl}|{kernel}|dir_{n}|operator"
    scope = record["retrieval"]["scope"]
    scope.update(vendor=hw.vendor, arch=hw.arch, product=product, dsl=dsl,
                 operator_family=kernel, operators=[kernel], architectures=[hw.arch])  # fmt: skip
    record["evidence"]["summary"]["measured_on"]["gpu"] = product
    record["payload"]["implementation"]["snippet"] = APPLIES + f"+    variant = {n}\n"
    del record["evidence"]["raw"]["effect"]
    record["worth"]["gain"]["pct"] = pct
    record["worth"]["gain"]["metrics"][0]["delta_pct"] = pct
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = record
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return record


def _geak(entry: str, name: str | None = None, rocm: object = None) -> dict:
    fields: dict = {"entry": entry}
    if name is not None:
        fields["kernel_name"] = name
    if rocm is not None:
        fields["verified_stack"] = {"rocm": rocm}
    return fields


RECORDS = [
    # hopper/h100, triton: a tie on speedup broken by reproductions, then by the id
    _record(
        1, pct=75.0, **{"evidence.raw.direction": "Tiling", "evidence.raw.bench_cases": ["a", "b"]}
    ),
    _record(
        2,
        pct=75.0,
        **{"evidence.raw.direction": " tiling ", "worth.track.counters.verified_effective": 2},
    ),
    _record(3, pct=75.0, **{"evidence.raw.direction": "TILING"}),
    _record(4, pct=72.0, episode_key="hopper|triton|softmax|tile_rows|operator"),
    _record(5, pct=72.0, episode_key="hopper|triton|softmax|tile_rows|operator"),
    _record(6, pct=None, **{"retrieval.signals.metrics.speedup_x": "1.45"}),
    _record(7, pct=None),  # no speedup anywhere: under every floor
    _record(8, pct=40.0, **{"evidence.raw.bench_key": None}),
    _record(9, pct=40.0, **{"evidence.raw.direction": "", "evidence.raw.bench_key": "bk:custom"}),
    _record(
        10,
        pct=12.0,
        **{
            "worth.gain.metrics": [
                {
                    "metric": "throughput",
                    "direction": "higher-better",
                    "delta_pct": 25.0,
                    "measured_over": "6 shapes",
                }
            ],
            "worth.gain.primary": "throughput",
        },
    ),
    _record(
        11, pct=None, **{"evidence.raw.effect": {"parent_geomean_us": 50.0, "new_geomean_us": 20.0}}
    ),
    _record(12, pct=60.0, status="deprecated"),
    _record(13, pct=55.0, status="superseded", **{"evidence.raw.direction": "tiling"}),
    _record(14, pct=70.0, **{"payload.implementation.snippet": "  "}),  # no code
    _record(15, pct=65.0, **{"payload.implementation.format": "source (python)"}),  # no code
    _record(16, pct=45.0, **{"payload.implementation.snippet": DOES_NOT_APPLY}),
    _record(17, pct=1e-300),
    _record(18, pct=25.0, **{"worth.track.counters.verified_effective": 1e300}),
    _record(19, pct=30.0, **{"evidence.summary.measured_on.gpu": "a100"}),  # mislabeled
    _record(
        20,
        pct=33.0,
        type="reference-kernel",
        **{
            "payload.implementation.format": "source (triton)",
            "payload.implementation.snippet": "def k(x):\n    return x\n",
        },
    ),
    _record(21, pct=50.0, type="anti-strategy"),
    # other pages and languages
    _record(30, product="a100", pct=50.0),
    _record(31, dsl="cuda", pct=80.0),
    _record(32, product="h200", pct=10.0),
    # gfx942 (mi300x): GEAK imports (exp ids break a tie), and a mined record
    _record(
        40,
        product="mi300x",
        pct=30.0,
        **{
            "evidence.raw.geak": _geak(
                "gfx942/norm/Softmax__triton__gfx942/20250101_120000_aaaaaa", "Softmax", "6.2.1"
            )
        },
    ),
    _record(
        41,
        product="mi300x",
        pct=30.0,
        **{
            "evidence.raw.geak": _geak(
                "gfx942/norm/softmax__triton__gfx942/20240101_120000_bbbbbb", rocm=6.1
            )
        },
    ),
    _record(
        42,
        product="mi300x",
        pct=30.0,
        **{"evidence.raw.geak": _geak("gfx942/norm//20230101", rocm=0)},
    ),  # not an entry: four parts, one empty
    _record(43, product="mi300x", pct=22.0, **{"retrieval.scope.operators": ["Softmax_Fwd"]}),
    _record(
        44,
        product="mi300x",
        pct=18.0,
        dsl="any",
        **{
            "payload.problem.dsl": "hip",
            "evidence.raw.geak": _geak(
                "gfx942/norm/softmax__hip__gfx942/20250202_000000_cccccc",
                "softmax",
                {"version": "6.3"},
            ),
        },
    ),
    # another kernel, and a near name for the fuzzy tier
    _record(50, kernel="layernorm", pct=30.0),
    _record(51, kernel="softmax_online", pct=30.0),
]
NOT_JSON = "records/strategy/nvidia/hopper/triton/softmax/nvidia.h100.triton.softmax.broken.json"
LEDGERS = {
    RECORDS[0]["id"]: [{"event": "attest", "outcome": "not_reproduced"}] * 2,
    RECORDS[1]["id"]: [{"event": "attest", "outcome": "validated", "at": "2025-01-01"}],
    RECORDS[4]["id"]: [{"event": "attest-counts", "counts": {"recalls": 4}}],
}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    location = tmp_path_factory.mktemp("columns") / "kb.git"
    store = Store.init(location, bare=True)
    edits: dict[str, bytes | None] = {rec.path_for(r): rec.dumps(r) for r in RECORDS}
    edits[NOT_JSON] = b'{"id": "nvidia.h100.triton.softmax.broken", '
    for record_id, events in LEDGERS.items():
        lines = [json.dumps(e).encode() for e in events]
        edits[ledger_path(record_id)] = b"\n".join([*lines, b"not json"]) + b"\n"

    def build(view) -> Change:
        return Change("import", "curation-columns", edits, body="varied records.",
                      trailers=[("KB-Source", "test")])  # fmt: skip

    store.commit([build])
    return Store.open(location)


def _full_parse(store: Store):
    """resolve's candidates by the full-parse rule: every same-page code record and its
    ledger read and parsed, its facts taken from the record."""

    def candidates(wanted, counts):
        view = store.view()
        paths = [row.path for row, _, _ in wanted] + [ledger_path(row.id) for row, _, _ in wanted]
        blobs = view.read_checked(paths)
        found = []
        for row, retired, page in wanted:
            raw = blobs.get(row.path)
            record = None if raw is None else rec.load(row.path, raw).data
            if record is None or record.get("id") != row.id:
                counts["corrupt"] += 1
                continue
            if code_of(record) is None:
                counts["no_code"] += 1
                continue
            ledger = parse_ledger(ledger_path(row.id), blobs.get(ledger_path(row.id)))
            tally = ledger.counts()
            if ledger.bad_lines:
                tally["unreadable_lines"] = len(ledger.bad_lines)
            found.append(curate.code_record(record, row.path, retired, tally, page,
                                            row.language or curate.ANY_LANGUAGE,
                                            retire_hint(tally)))  # fmt: skip
        return found

    return candidates


def _kernel_file(tmp_path: Path) -> str:
    kernel = tmp_path / "softmax.py"
    kernel.write_text(KERNEL_SOURCE)
    return str(kernel)


QUESTIONS = {
    "arch": dict(kernel="softmax", arch="hopper"),
    "product": dict(kernel="triton_softmax.py", product="h100"),
    "any-language": dict(kernel="softmax", arch="hopper", dsl="any"),
    "cuda": dict(kernel="softmax", arch="hopper", dsl="cuda"),
    "retired": dict(kernel="softmax", arch="hopper", include_retired=True, top_n=10),
    "low-floor": dict(kernel="softmax", product="h100", min_speedup=0.0, top_n=20),
    "high-floor": dict(kernel="softmax", product="h100", min_speedup=1.6),
    "top-1": dict(kernel="softmax", arch="hopper", top_n=1),
    "ampere": dict(kernel="softmax", arch="ampere"),
    "gfx942": dict(kernel="softmax", product="gfx942", dsl="any", top_n=5),
    "gfx942-geak": dict(kernel="softmax", product="mi300x", dsl="any", shape="geak"),
    "cdna3": dict(kernel="Softmax", arch="cdna3", dsl="any", min_speedup=1.0),
    "fuzzy": dict(kernel="softmx_online", arch="hopper"),
    "not-found": dict(kernel="rmsnorm", arch="hopper"),
    "no-arch": dict(kernel="softmax"),
    "kernel-file": dict(arch="hopper", top_n=5, kernel_file=True),
    "kernel-file-floor": dict(arch="hopper", min_speedup=1.35, kernel_file=True),
}


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_the_answer_is_the_full_parse_answer(store, tmp_path, monkeypatch, name):
    asked = dict(QUESTIONS[name])
    if asked.pop("kernel_file", False):
        asked["kernel"] = _kernel_file(tmp_path)
    shape = asked.get("shape", "gitkb")
    got = resolve.resolve(store, **asked, out=str(tmp_path / "got"))
    with monkeypatch.context() as patched:
        patched.setattr(resolve, "_candidates", _full_parse(store))
        want = resolve.resolve(store, **asked, out=str(tmp_path / "want"))
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True).replace(
        str(tmp_path / "want"), str(tmp_path / "got")
    )
    assert _tree(tmp_path / "got") == _tree(tmp_path / "want", tmp_path / "got")
    if name == "arch":  # the store is as varied as meant: ties, alternates, every count
        assert got["read_reason"] == "read" and len(got["ranks"]) == 3
        assert any(rank["alternates"] for rank in got["ranks"])
        counts = got["counts"]
        assert counts["corrupt"] == 1 and counts["no_code"] == 2 and counts["retired"] == 2
        assert counts["below_floor"] and counts["mislabeled"] and counts["beyond_top_n"]
    if shape == "geak":
        assert got["read_reason"] == "read" and len(got["candidates"]) >= 2


def _tree(root: Path, renamed: Path | None = None) -> dict[str, bytes]:
    """Every file under ``root`` by relative path (``root`` named as ``renamed`` inside)."""
    if not root.exists():
        return {}
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if renamed is not None:
            data = data.replace(str(root).encode(), str(renamed).encode())
        files[str(path.relative_to(root))] = data
    return files


def _keys_by_the_record(record: dict, page: str | None, language: str) -> list[str]:
    """A page's GEAK service keys by the full-parse rule: the record's GEAK entry (where
    the import read it, or where an export files it) and its stated ROCm."""
    entry = geak.entry_of(record, page, language)
    if entry is None:
        return []
    stack = geak.geak_fields(record).get("verified_stack")
    rocm = stack.get("rocm") if isinstance(stack, dict) else None
    return geak.service_keys(entry.gfx, entry.kernel_name, entry.language, rocm)


def test_geak_keys_are_the_full_parse_keys(store):
    """The cached facts are the record's, and the page's GEAK service keys (``--geak-key``)
    come from them alone as from the parsed record."""
    view = store.view()
    with view.cache.snapshot(view.tip) as cache:
        rows = cache.kernel_rows(["softmax", "softmax_fwd", "softmax_online"])
    keyed = 0
    for row in rows:
        if row.curation is None:
            continue
        record = rec.load(row.path, view.read_files([row.path])[row.path]).data
        assert row.curation == curation_facts(record)
        language = row.language or curate.ANY_LANGUAGE
        for page in (curate.page_of(row.product, None), "gfx942", "gfx90a", None):
            from_columns = curate.CodeRecord(row.id, row.path, row.curation, False, page=page,
                                             language=language)  # fmt: skip
            keys = geak.keys_of(from_columns)
            assert keys == _keys_by_the_record(record, page, language), (row.path, page)
            keyed += bool(keys)
    assert keyed >= 10
    answer = resolve.resolve(store, "softmax", product="mi300x", dsl="any")
    assert "geak:kernel:gfx942:softmax:triton:rocm:6.2" in answer["geak_keys"]
    assert "geak:kernel:gfx942:softmax:triton:rocm:6.1" in answer["geak_keys"]
    assert any(":hip:" in key for key in answer["geak_keys"])


def test_a_forged_curation_column_is_caught_when_served(store, tmp_path):
    """A cache row whose curation columns are not its record's (edited by hand) is caught
    when the record is served: the cache is rebuilt and the answer is the honest one."""
    import shutil
    import sqlite3

    location = tmp_path / "kb.git"
    shutil.copytree(store.location, location)
    honest = resolve.resolve(Store.open(location), "softmax", arch="hopper")
    last = RECORDS[16]  # under the floor: never served
    with sqlite3.connect(location / "gitkb-cache" / "index.sqlite3") as db:
        db.execute("UPDATE records SET code_speedup = 99.0 WHERE path = ?", (rec.path_for(last),))
    assert resolve.resolve(Store.open(location), "softmax", arch="hopper") == honest


def test_only_what_is_served_is_read(store, tmp_path, monkeypatch):
    """Choosing reads no record: the records read (and checked against main's tree) are
    the ranks, their alternates and the reference-only ones; with a kernel file, every
    candidate above the floor, whose diff is tried on it."""
    from gitkb.store.view import StoreView

    read: list[str] = []
    original = StoreView.read_checked

    def spy(view, paths):
        read.extend(p for p in paths if p.startswith("records/"))
        return original(view, paths)

    monkeypatch.setattr(StoreView, "read_checked", spy)

    def served(answer: dict) -> set[str]:
        ranks = answer["ranks"] + answer["reference_only"]
        ids = {r["id"] for r in ranks} | {a["id"] for r in ranks for a in r.get("alternates", [])}
        return {rec.path_for(r) for r in RECORDS if r["id"] in ids}

    answer = resolve.resolve(store, "softmax", arch="hopper", top_n=2)
    assert answer["counts"]["same_arch"] > 2 * len(served(answer)) > 0
    assert sorted(read) == sorted(served(answer))
    read.clear()
    answer = resolve.resolve(store, _kernel_file(tmp_path), arch="hopper", top_n=2)
    assert answer["reference_only"] and set(read) > served(answer)
    above = [r for r in RECORDS if rec.path_for(r) in read]
    assert (
        len(above)
        == len(read)
        == answer["counts"]["same_arch"]
        - sum(answer["counts"][k] for k in ("retired", "below_floor", "no_code", "corrupt"))
    )
