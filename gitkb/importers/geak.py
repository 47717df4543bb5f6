"""GEAK experience stores: ``<root>/<gfx>/<kernel_class>/<slug>/<exp_id>/`` -> records.

A patch entry becomes a ``strategy`` record (the diff verbatim; the gain from
``metric.speedup``, basis ``reported`` unless a bench key and cases make it a
measurement), its structured dead ends become anti-strategy candidates that
must pass the established-fact gate like any other, a retired entry becomes a
deprecated record (a retract line in its ledger keeps the reason and what an
unretract restores), and its attestations become ledger lines. Entries with
the same code on the same page are reproductions of the first. Whatever cannot
become a valid record is listed with the reason. All of it is one ``import``
commit.

``meta.yaml`` nests maps and lists (metric, attestations.history, upstream,
dead_ends), so it is read with PyYAML's safe loader; ``meta.json`` also works.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from gitkb import record as rec
from gitkb import targets
from gitkb.errors import GitkbError
from gitkb.importers import ImportReport
from gitkb.store.layout import ledger_path
from gitkb.warmstart.attest import appended, event_line, parse_ledger
from gitkb.warmstart.curate import canonical_kernel

_GFX = re.compile(r"gfx\d+[a-z]?", re.I)
_EXP_ID = re.compile(r"(\d{8})_(\d{6})_([0-9a-f]{6})")
_DSLS = set(rec.DSLS) - {"any"}
_CARRIERS = ("patch", "tuned_artifact")
_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"
_FORMULA = (
    "clamp(prior + 0.35*signed_feedback*confidence + usage_bonus) * recency_decay(half_life=90d)"
)
_STRATEGY_PRIOR = 0.3  # spec 9: a strategy with no prior parts
_ANTI_PRIOR = 0.45
# What the store's anonymization and no-cross-reference gates refuse in prose.
_SCRUB = (
    (re.compile(r"(?<![\w.])/(?:[\w.+-]+/)*[\w.+-]+"), "<path>"),
    (re.compile(r"[\w.+-]{2,}@[\w-]+\.[a-z]{2,}\b"), "<email>"),
    (re.compile(r"\b\w[\w/-]*\.md\b"), "the run's report"),
    (re.compile(r"(?:docs|records)/[\w./-]+"), "<path>"),
)


def scrub(text: object) -> str:
    out = text if isinstance(text, str) else ""
    for pattern, replacement in _SCRUB:
        out = pattern.sub(replacement, out)
    return out.strip()


def _slug(text: str, limit: int = 48) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")


def _section(report: str, title: str) -> str:
    """The body of the markdown section whose heading contains ``title`` (case-insensitive)."""
    lines, taking, out = report.splitlines(), False, []
    for line in lines:
        if line.lstrip().startswith("#"):
            if taking:
                break
            taking = title.lower() in line.lower()
            continue
        if taking:
            out.append(line)
    return "\n".join(out).strip()


class Skip(Exception):
    """An entry that cannot become a record; the message is the reason."""


def read_meta(folder: Path) -> dict:
    for name in ("meta.yaml", "meta.yml", "meta.json"):
        path = folder / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            if name == "meta.json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
        except Exception as exc:  # noqa: BLE001 - any parser failure is this entry's skip reason
            raise Skip(f"{name} is unreadable ({type(exc).__name__})") from None
        if not isinstance(data, dict):
            raise Skip(f"{name} is not a mapping")
        return data
    raise Skip("no meta.yaml or meta.json")


def entries(root: Path) -> list[Path]:
    """Entry folders: four levels below the root, holding a meta file."""
    if (root / "kb_artifacts").is_dir():
        root = root / "kb_artifacts"
    found = set()
    for name in ("meta.yaml", "meta.yml", "meta.json"):
        for meta in root.glob(f"*/*/*/*/{name}"):
            found.add(meta.parent)
    return sorted(found)


def _identity(folder: Path, root: Path, meta: dict) -> dict:
    """gfx, hardware, kernel class and name, language and exp id of one entry."""
    gfx_dir, kernel_class_dir, slug, exp_id = folder.relative_to(root).parts[-4:]
    found = _GFX.search(str(meta.get("gfx") or "")) or _GFX.search(gfx_dir)
    if not found:
        raise Skip("missing arch (no gfx token in meta or path)")
    gfx = found.group(0).lower()
    hardware = targets.lookup(gfx)
    if hardware is None:
        raise Skip(f"arch {gfx} is not in the target table")
    parts = slug.rsplit("__", 2)
    name = meta.get("kernel_name") or parts[0]
    language = str(meta.get("language") or (parts[1] if len(parts) == 3 else "unknown")).lower()
    if not _EXP_ID.fullmatch(exp_id):
        raise Skip(f"exp id {exp_id!r} is not YYYYmmdd_HHMMSS_ plus 6 hex digits")
    kernel = canonical_kernel(str(name))
    if not _slug(kernel):
        raise Skip("no kernel name")
    metric = meta.get("metric") if isinstance(meta.get("metric"), dict) else {}
    product = targets.lookup(str(metric.get("gpu_arch") or ""))
    return {
        "gfx": gfx,
        "hardware": hardware,
        "product": product.product if product and product.arch == hardware.arch else None,
        "kernel_class": str(meta.get("kernel_class") or kernel_class_dir or "unknown"),
        "kernel": kernel,
        "language": language,
        "dsl": language if language in _DSLS else "any",
        "exp_id": exp_id,
        "where": folder.relative_to(root).as_posix(),
    }


def _gate(meta: dict, folder: Path) -> tuple[float, str]:
    """GEAK's own write gate, in its order: the speedup and the diff, or a Skip."""
    metric = meta.get("metric") if isinstance(meta.get("metric"), dict) else {}
    value = metric.get("speedup")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Skip(f"speedup {value!r} is not a finite number")
    if value <= 1.0:
        raise Skip(f"speedup {value} is not above 1.0")
    carrier = meta.get("carrier") or "patch"
    if carrier not in _CARRIERS:
        raise Skip(f"unknown carrier {carrier!r}")
    if carrier == "tuned_artifact":
        raise Skip("tuned_artifact carrier: a tuned table has no clean-1.3 code form")
    diff_path = folder / "patch.diff"
    diff = diff_path.read_text(encoding="utf-8", errors="replace") if diff_path.is_file() else ""
    if not diff.strip():
        raise Skip("empty diff (no patch.diff)")
    return float(value), diff


def _rank(score: float, tier: str) -> dict:
    return {"score": score, "tier": tier, "formula": _FORMULA, "builder_version": "1.1"}


def strategy(ident: dict, meta: dict, speedup: float, diff: str, report: str) -> dict:
    hw = ident["hardware"]
    metric = meta.get("metric") if isinstance(meta.get("metric"), dict) else {}
    cases = [str(c) for c in metric.get("case_names") or [] if str(c).strip()]
    bench_key = metric.get("bench_key") if isinstance(metric.get("bench_key"), str) else None
    measured = bool(bench_key and cases)
    pct = round((1 - 1 / speedup) * 100, 2)
    direction = scrub(meta.get("direction"))[:120]
    techniques = [_slug(str(t)) for t in meta.get("techniques") or [] if _slug(str(t))]
    technique = _slug(direction) or (techniques[0] if techniques else "geak-patch")
    date, _, hexid = _EXP_ID.fullmatch(ident["exp_id"]).groups()
    kernel, arch = _slug(ident["kernel"]), hw.arch
    first_line = next((ln.strip("# ").strip() for ln in report.splitlines() if ln.strip()), "")
    strategy_text = scrub(meta.get("strategy") or first_line)[:300]
    key_opts = scrub(_section(report, "key optimization"))
    dead_prose = scrub(meta.get("dead_ends_md") or _section(report, "what didn"))
    where = f"{ident['gfx']} {ident['language']} {ident['kernel']}"
    retained = meta.get("retained")
    retired = (
        retained is False
        or bool(meta.get("retired_reason"))
        or meta.get("lifecycle") == "retracted"
    )
    # No source_repo: that names a trace mined into this store, and a GEAK entry has none.
    raw = {
        "detail_file": f"geak:{ident['where']}",
        "direction": direction or None,
        "bench_key": bench_key,
        "bench_cases": sorted(cases) if cases else None,
        "dead_ends_md": dead_prose or None,
        "geak": {
            k: meta.get(k)
            for k in (
                "lifecycle",
                "carrier",
                "kernel_class",
                "content_signature",
                "reproductions",
                "derived_from",
                "verified_on",
                "verified_stack",
                "upstream",
                "retained",
                "retired_reason",
            )
            if meta.get(k) is not None
        }
        | {"entry": ident["where"], "gfx": ident["gfx"], "language": ident["language"]},
    }
    if isinstance(metric.get("wall_ms"), (int, float)) and isinstance(
        metric.get("baseline_wall_ms"), (int, float)
    ):
        raw["effect"] = {
            "basis": "measured",
            "new_geomean_us": metric["wall_ms"] * 1000,
            "baseline_geomean_us": metric["baseline_wall_ms"] * 1000,
            "parent_geomean_us": metric["baseline_wall_ms"] * 1000,
            "delta_pct": pct,
            "comparable": measured,
        }
    raw = {k: v for k, v in raw.items() if v is not None}
    reproductions = meta.get("reproductions")
    reproductions = reproductions if isinstance(reproductions, int) and reproductions > 0 else 0
    return {
        "schema": rec.SCHEMA_NAME,
        "id": f"{hw.vendor}.{ident['product'] or 'any'}.{ident['dsl']}.{kernel}."
        f"{technique[:40].strip('-')}-{date}-{hexid}",
        "type": "strategy",
        "level": "operator",
        "status": "deprecated" if retired else "active",
        "episode_key": f"{arch}|{ident['dsl']}|{kernel}|{technique.replace('-', '_')}|operator",
        "retrieval": {
            "scope": {
                "vendor": hw.vendor,
                "arch": arch,
                "product": ident["product"],
                "dsl": ident["dsl"],
                "operator_family": _slug(ident["kernel_class"])
                if ident["kernel_class"] != "unknown"
                else kernel,
                "operators": [ident["kernel"]],
                "architectures": [ident["gfx"]],
            },
            "generality": {"arch": arch, "language": ident["dsl"]},
            "signals": {
                "bottleneck": None,
                "metrics": {"speedup_x": round(speedup, 4)},
                "shape_regime": {"n_shapes": len(cases)} if cases else {},
                "symptoms": [],
            },
            "technique_tags": techniques or [technique],
            "triggers": [f"optimizing the {where} kernel on {arch}"],
        },
        "payload": {
            "goal": f"Speed up the {where} kernel on {arch}.",
            "problem": {
                "target": f"{hw.vendor.upper()} {arch} ({ident['gfx']})",
                "statement": strategy_text or f"The {where} kernel is slower than it needs to be.",
                "operator": ident["kernel"],
                "dsl": ident["language"],
            },
            "trace": {
                "builds_on": {
                    "approach": scrub(str(meta.get("derived_from") or ""))
                    or "the run's baseline kernel",
                    "is_baseline": not meta.get("derived_from"),
                },
                "technique_here": techniques or [technique],
            },
            "change": direction or strategy_text or "the change in the diff",
            "mechanism": key_opts,
            "implementation": {"format": _FORMAT, "snippet": diff},
            "cost": {
                "edit_scope": "kernel-rewrite",
                "risk": "med",
                "risk_basis": "imported from a GEAK run; not assessed here",
            },
            "next_steps": [],
        },
        "evidence": {
            "summary": {
                "confidence": "measured" if measured else "documented",
                "measured_on": {"gpu": ident["gfx"]},
            },
            "raw": raw,
        },
        "worth": {
            "rank": _rank(
                0 if retired else _STRATEGY_PRIOR, "promising" if measured else "provisional"
            ),
            "gain": {
                "basis": "measured" if measured else "reported",
                "kind": "performance",
                "primary": "latency",
                "pct": pct,
                "metrics": [
                    {
                        "metric": "latency",
                        "direction": "lower-better",
                        "delta_pct": pct,
                        "unit": "%",
                        "measured_over": f"{len(cases)} cases" if cases else "the run's benchmark",
                        "source": "harness" if measured else "step-record",
                    }
                ],
                "regressions": [],
                "comparable": measured,
            },
            "track": rec.new_track(verified_effective=reproductions),
        },
    }


def anti_strategies(ident: dict, meta: dict, parent: dict) -> list[dict]:
    """The structured dead ends as anti-strategy candidates (the gates decide)."""
    out = []
    hw = ident["hardware"]
    _, _, hexid = _EXP_ID.fullmatch(ident["exp_id"]).groups()
    for n, item in enumerate(meta.get("dead_ends") or [], 1):
        if isinstance(item, str):
            item = {"what": item}
        if not isinstance(item, dict):
            continue
        attempted = scrub(item.get("what") or item.get("attempted") or item.get("idea"))
        why = scrub(item.get("why") or item.get("mechanism") or item.get("reason"))
        if not attempted:
            continue
        technique = _slug(attempted, 40) or "dead-end"
        out.append(
            {
                "schema": rec.SCHEMA_NAME,
                "id": f"{hw.vendor}.{ident['product'] or 'any'}.{ident['dsl']}.misc.anti."
                f"{technique}-{hexid}-t{n:02d}",
                "type": "anti-strategy",
                "level": "operator",
                "status": "active",
                "episode_key": f"{hw.arch}|{ident['dsl']}|{_slug(ident['kernel'])}|"
                f"{technique.replace('-', '_')}|operator",
                "retrieval": {
                    "scope": dict(parent["retrieval"]["scope"]),
                    "generality": dict(parent["retrieval"]["generality"]),
                    "signals": {
                        "bottleneck": None,
                        "metrics": {},
                        "shape_regime": {},
                        "symptoms": [],
                    },
                    "technique_tags": [technique],
                    "triggers": list(parent["retrieval"]["triggers"]),
                },
                "payload": {
                    "goal": parent["payload"]["goal"],
                    "problem": dict(parent["payload"]["problem"]),
                    "attempted": attempted,
                    "verdict": "not-worth-it-here",
                    "lesson": why or attempted,
                    "established_fact": {
                        "condition": {"sm_arch": ident["gfx"], "toolchain": ident["language"]},
                        "mechanism": why,
                    },
                },
                "evidence": {
                    "summary": {"confidence": "documented"},
                    "raw": {"detail_file": f"geak:{ident['where']}"},
                },
                "worth": {
                    "rank": _rank(_ANTI_PRIOR, "cautionary"),
                    "gain": {"basis": "qualitative", "kind": "none", "pct": None, "metrics": []},
                    "track": rec.new_track(),
                },
            }
        )
    return out


def ledger_events(meta: dict, record: dict) -> list[dict]:
    """Attestation history as ledger lines (a tally line for what the history dropped), and
    the retract line of a retired entry."""
    events = []
    att = meta.get("attestations") if isinstance(meta.get("attestations"), dict) else {}
    history = [h for h in att.get("history") or [] if isinstance(h, dict)]
    seen = {"recalls": 0, "validations": 0, "failures": 0, "not_reproduced": 0, "inapplicable": 0}
    names = {"validated": "validations", "failed": "failures"}
    for item in history:
        outcome = item.get("outcome")
        if outcome not in ("validated", "failed", "not_reproduced", "inapplicable"):
            continue
        seen["recalls"] += 1
        seen[names.get(outcome, outcome)] += 1
        events.append(
            {
                "event": "attest",
                "at": str(item.get("at") or ""),
                "outcome": outcome,
                "by": scrub(str(item.get("by") or "geak")),
                "source": "geak",
            }
        )
    rest = {k: att.get(k, 0) - seen[k] for k in seen if isinstance(att.get(k), int)}
    rest = {k: v for k, v in rest.items() if v > 0}
    if rest:
        events.append({"event": "attest-counts", "counts": rest, "source": "geak"})
    if record["status"] == "deprecated":
        reason = scrub(str(meta.get("retired_reason") or "")) or "retired in the GEAK store"
        events.append(
            event_line(
                "retract",
                reason=reason,
                by="geak import",
                was={"status": "active", "score": _STRATEGY_PRIOR},
            )
        )
    return events


def import_tree(store, folder) -> ImportReport:
    from gitkb.record.signature import content_signature
    from gitkb.store.admission import count_confirmation, reproduction_of
    from gitkb.store.writer import Change

    root = Path(folder)
    if (root / "kb_artifacts").is_dir():
        root = root / "kb_artifacts"
    report = ImportReport("geak", None)
    prepared: list[tuple[str, dict, list[dict]]] = []
    for entry in entries(root):
        where = entry.relative_to(root).as_posix()
        try:
            meta = read_meta(entry)
            ident = _identity(entry, root, meta)
            speedup, diff = _gate(meta, entry)
            report_md = entry / "report.md"
            prose = (
                report_md.read_text(encoding="utf-8", errors="replace")
                if report_md.is_file()
                else ""
            )
            main = strategy(ident, meta, speedup, diff, prose)
        except Skip as exc:
            report.skipped.append({"entry": where, "reason": str(exc)})
            continue
        for record in [main, *anti_strategies(ident, meta, main)]:
            _, findings = store.check_record(record, rec.path_for(record))
            if findings:
                reason = "; ".join(f"{f.gate}: {f.message}" for f in findings[:3])
                report.skipped.append({"entry": f"{where} ({record['type']})", "reason": reason})
                continue
            events = ledger_events(meta, record) if record is main else []
            prepared.append((where, record, events))
    if not prepared and not report.skipped:
        raise GitkbError(f"{folder}: no GEAK entries (<gfx>/<kernel_class>/<slug>/<exp_id>/meta.*)")

    def build(view):
        report.imported, report.reproductions = 0, []
        edits: dict[str, bytes | None] = {}
        pending: dict[str, tuple[str, dict]] = {}  # id -> (path, record) written by this import
        signatures: dict[tuple, str] = {}  # (signature, type, episode key) -> id, this import

        def holder(record_id):
            if record_id in pending:
                return pending[record_id]
            loaded = view.read_record(record_id)
            if loaded.data is None:
                raise GitkbError(f"{record_id} is unreadable ({loaded.error}); nothing imported")
            return loaded.path, loaded.data

        for where, record, events in prepared:
            if record["id"] in view or record["id"] in pending:
                continue  # imported before
            page = (content_signature(record), record.get("type"), record.get("episode_key"))
            twin = signatures.get(page) if page[0] else None
            twin = twin or reproduction_of(view, record)
            if twin is not None:
                path, existing = holder(twin)
                if count_confirmation(existing, record["id"]) is not None:
                    pending[twin] = (path, existing)
                    edits[path] = rec.dumps(existing)
                    report.reproductions.append({"entry": where, "record": twin})
                continue
            path = rec.path_for(record)
            if page[0]:
                signatures[page] = record["id"]
            pending[record["id"]] = (path, record)
            edits[path] = rec.dumps(record)
            report.imported += 1
            if events:
                lpath = ledger_path(record["id"])
                ledger = parse_ledger(lpath, view.repo.read(view.tip, lpath))
                edits[lpath] = appended(ledger, False, *events)
        if not edits:
            return Change("import", f"geak:{root.name}", {}, note="nothing new to import")
        return Change(
            "import",
            f"geak:{root.name}",
            edits,
            body=f"Imported {report.imported} GEAK records; {len(report.reproductions)} "
            f"reproductions confirmed; {len(report.skipped)} entries not importable.",
            trailers=[
                ("KB-Source", "geak"),
                ("KB-Records", str(report.imported)),
                ("KB-Reproductions", str(len(report.reproductions))),
                ("KB-Skipped", str(len(report.skipped))),
            ],
        )

    report.commit = store.commit([build])[0].commit
    return report
