"""GEAK entries -> clean-1.3 records (docs/warm-start.md, "Importing a GEAK experience store").

A patch entry becomes a ``strategy`` record: the diff verbatim, the gain from
``metric.speedup`` (basis ``reported`` unless a bench key and cases make it a
measurement). A tuned_artifact entry becomes a strategy with no code
(implementation ``none``) whose ``payload.config`` carries the tuned tables and
how they are applied (``apply_env``, ``apply_route``, ``tuner``,
``cache_invalidation``): knowledge the store keeps, not code a run adopts.

The page is GEAK's: the ``<gfx>`` folder is the record's product (and picks its
arch; GEAK's ``gfx90`` is the gfx90a page), what the entry states it was measured
on is ``evidence.summary.measured_on`` (when the two differ the entry is
mislabeled and resolve serves it nowhere), the language stays the slug's, the raw
``kernel_name`` and the exp id are kept in ``evidence.raw.geak``, the speedup at
full precision. clean-1.3's dsl enum has
no HIP or CK: such a record says ``any`` in ``retrieval.scope.dsl`` and keeps its
language in ``payload.problem.dsl``, where resolve reads it, and says so in
``payload.applies_when``. The direction is stated in ``evidence.raw.direction``
even when empty (an undirected entry stands alone), the bench key in
``evidence.raw.bench_key`` even when missing (null: not comparable). GEAK's
``reproductions`` counts measurements of the code, the first included, so a
record's ``verified_effective`` is one less.

Structured dead ends become anti-strategy candidates that must pass the
established-fact gate like any other; a retired or retracted entry becomes a
deprecated record whose ledger keeps the reason; attestations become ledger
lines. Prose goes through the project's one scrubber.
"""

from __future__ import annotations

import re

from gitkb import record as rec
from gitkb import targets
from gitkb.importers.geak.reader import Entry, count, mapping, stamp_of
from gitkb.record.values import number_or_numeric_string
from gitkb.record.worth import ANTI_STRATEGY_PRIOR, FORMULA, STRATEGY_PRIOR
from gitkb.trace.scrub import Scrubber, denylist_from_env
from gitkb.warmstart.attest import OUTCOMES, Ledger, event_line

_DIFF_FORMAT = "unified-diff (verbatim; '-' = before this step, '+' = after)"
_DSLS = set(rec.DSLS) - {"any"}
_GEAK_FIELDS = (
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
_COUNTS = ("recalls", "validations", "failures", "not_reproduced", "inapplicable")
_TUNED_FIELDS = ("tuner", "apply_route", "apply_env", "cache_invalidation")


def slug(text: str, limit: int = 48) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")


def section(report: str, title: str) -> str:
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


def scrubber() -> Scrubber:
    """One entry's scrubber (the project's: trace/scrub.py), with the deployment's denylist."""
    return Scrubber(denylist_from_env())


def _prose(scrub: Scrubber, value: object) -> str:
    return scrub.text(value if isinstance(value, str) else "")


def as_written(scrub: Scrubber, value: object) -> str:
    """A short GEAK field as GEAK wrote it (its resolve groups and prints it verbatim),
    unless the scrubber finds something to take out: then the scrubbed text."""
    text = value if isinstance(value, str) else ""
    cleaned = scrub.text(text)
    return text if cleaned == " ".join(text.split()) else cleaned


def retired(meta: dict) -> bool:
    """GEAK's curation verdict, as its resolve reads it: ``retained: false`` or a reason
    (a ``lifecycle`` of ``retracted`` alone is still served there, and here)."""
    return meta.get("retained") is False or bool(meta.get("retired_reason"))


def _rank(score: float, tier: str) -> dict:
    return {"score": score, "tier": tier, "formula": FORMULA, "builder_version": "1.1"}


def _dsl(entry: Entry) -> str:
    return dsl_of(entry.language)


def dsl_of(language: str) -> str:
    return language if language in _DSLS else "any"


def record_id(hardware: targets.Hardware, language: str, kernel: str, exp_id: str) -> str:
    """The id of an entry's strategy, from its path alone (page, language, kernel, exp id),
    so a re-import finds it without reading the entry. A language clean-1.3 cannot name
    (HIP, CK) is spelled in the tail, so two languages' entries never share an id."""
    dsl = dsl_of(language)
    tail = (
        f"geak-{stamp_of(exp_id)}" if dsl != "any" else f"geak-{slug(language)}-{stamp_of(exp_id)}"
    )
    return f"{hardware.vendor}.{hardware.page}.{dsl}.{slug(kernel)}.{tail}"


def _language_note(entry: Entry) -> str:
    if entry.language in _DSLS:
        return f"the kernel is written in {entry.language}"
    return (
        f"the kernel is written in {entry.language} (clean-1.3's dsl enum cannot name it: "
        "retrieval.scope.dsl is 'any' and payload.problem.dsl keeps the language)"
    )


def _geak_raw(entry: Entry, scrub: Scrubber) -> dict:
    """What GEAK's resolve and service key read of the entry, kept as GEAK wrote it (prose
    scrubbed): the raw kernel name, techniques, strategy and metric kind beside the rest."""
    meta = entry.meta
    kept = {k: meta.get(k) for k in _GEAK_FIELDS if meta.get(k) is not None}
    techniques = meta.get("techniques") if isinstance(meta.get("techniques"), list) else []
    return kept | {
        "techniques": [as_written(scrub, str(t).strip()) for t in techniques if str(t).strip()],
        "strategy": as_written(scrub, str(meta.get("strategy") or "")),
        "metric_kind": str(entry.metric.get("metric_kind") or ""),
        "entry": entry.where,
        "digest": entry.digest,
        "exp_id": entry.exp_id,
        "slug": entry.slug,
        "kernel_name": entry.kernel_name,
        "gfx": entry.gfx,
        "filed_under": entry.gfx_key,
        "measured_on": entry.measured_gfx,
        "language": entry.language,
    }


def _implementation(entry: Entry, scrub: Scrubber) -> tuple[dict, dict | None, str]:
    """(implementation, payload.config or None, the change in words)."""
    if entry.carrier == "patch":
        return {"format": _DIFF_FORMAT, "snippet": entry.diff}, None, ""
    meta = entry.meta
    config = {"carrier": "tuned_artifact", "artifacts": dict(entry.artifacts)}
    config |= {k: meta[k] for k in _TUNED_FIELDS if meta.get(k) not in (None, "", [], {})}
    tuner = _prose(scrub, meta.get("tuner")) or "a tuner"
    names = ", ".join(sorted(entry.artifacts))
    change = (
        f"apply the tuned table ({names}) that {tuner} produced, through the environment "
        "payload.config names; the kernel's code does not change"
    )
    return {"format": "none"}, config, change


def strategy(entry: Entry) -> dict:
    """The entry's strategy record."""
    scrub = scrubber()
    hw, meta, metric = entry.hardware, entry.meta, entry.metric
    cases = [str(c) for c in metric.get("case_names") or [] if str(c).strip()]
    stated_key = metric.get("bench_key")
    bench_key = stated_key.strip() if isinstance(stated_key, str) and stated_key.strip() else None
    measured = bool(bench_key and cases)
    speedup = entry.speedup
    pct = round((1 - 1 / speedup) * 100, 2)
    direction = as_written(scrub, meta.get("direction"))
    techniques = [slug(str(t)) for t in meta.get("techniques") or [] if slug(str(t))]
    stamp = entry.stamp
    kernel, arch, page = slug(entry.kernel), hw.arch, entry.gfx
    # An undirected entry shares no episode key with another: it stands alone.
    technique = slug(direction) or (techniques[0] if techniques else "patch")
    episode_technique = slug(direction) or f"undirected-{stamp}"
    lines = (line.strip("# ").strip() for line in entry.report.splitlines())
    first_line = next((line for line in lines if line), "")
    strategy_text = _prose(scrub, meta.get("strategy") or first_line)[:300]
    key_opts = _prose(scrub, section(entry.report, "key optimization"))
    dead_prose = _prose(scrub, meta.get("dead_ends_md") or section(entry.report, "what didn"))
    where = f"{page} {entry.language} {entry.kernel}"
    is_retired = retired(meta)
    implementation, config, tuned_change = _implementation(entry, scrub)
    # No source_repo: that names a trace mined into this store, and a GEAK entry has none.
    raw = {
        "detail_file": f"geak:{entry.where}",
        "direction": direction,
        "bench_key": bench_key,
        "geak": _geak_raw(entry, scrub),
    }
    if cases:
        raw["bench_cases"] = sorted(cases)
    if dead_prose:
        raw["dead_ends_md"] = dead_prose
    wall, baseline = (
        number_or_numeric_string(metric.get("wall_ms")),
        number_or_numeric_string(metric.get("baseline_wall_ms")),
    )
    if wall is not None and baseline is not None:
        raw["effect"] = {
            "basis": "measured",
            "new_geomean_us": wall * 1000,
            "baseline_geomean_us": baseline * 1000,
            "parent_geomean_us": baseline * 1000,
            "delta_pct": pct,
            "comparable": measured,
        }
    payload = {
        "goal": f"Speed up the {where} kernel on {arch}.",
        "problem": {
            "target": f"{hw.vendor.upper()} {arch} ({page})",
            "statement": strategy_text or f"The {where} kernel is slower than it needs to be.",
            "operator": entry.kernel,
            "dsl": entry.language,
        },
        "trace": {
            "builds_on": {
                "approach": _prose(scrub, str(meta.get("derived_from") or ""))
                or "the run's baseline kernel",
                "is_baseline": not meta.get("derived_from"),
            },
            "technique_here": techniques or [technique],
        },
        "change": direction or tuned_change or strategy_text or "the change in the diff",
        "mechanism": key_opts,
        "implementation": implementation,
        "cost": {
            # A tuned table changes no code: one environment setting applies it.
            "edit_scope": "kernel-rewrite" if config is None else "one-line",
            "risk": "med",
            "risk_basis": "imported from a GEAK run; not assessed here",
        },
        "next_steps": [],
        "applies_when": [_language_note(entry)],
    }
    if config is not None:
        payload["config"] = config
    return {
        "schema": rec.SCHEMA_NAME,
        "id": record_id(entry.hardware, entry.language, entry.kernel, entry.exp_id),
        "type": "strategy",
        "level": "operator",
        "status": "deprecated" if is_retired else "active",
        "episode_key": f"{arch}|{entry.language}|{kernel}|{episode_technique.replace('-', '_')}"
        "|operator",
        "retrieval": {
            "scope": {
                "vendor": hw.vendor,
                "arch": arch,
                "product": page,
                "dsl": _dsl(entry),
                "operator_family": slug(entry.kernel_class)
                if entry.kernel_class != "unknown"
                else kernel,
                "operators": [entry.kernel],
                "architectures": [page],
            },
            "generality": {"arch": arch, "language": _dsl(entry)},
            "signals": {
                "bottleneck": None,
                "metrics": {"speedup_x": speedup},  # full precision: GEAK ranks on it
                "shape_regime": {"n_shapes": len(cases)} if cases else {},
                "symptoms": [],
            },
            "technique_tags": techniques or [technique],
            "triggers": [f"optimizing the {where} kernel on {arch}"],
        },
        "payload": payload,
        "evidence": {
            "summary": {
                "confidence": "measured" if measured else "documented",
                "measured_on": {"gpu": entry.measured_gfx},
            },
            "raw": raw,
        },
        "worth": {
            "rank": _rank(
                0 if is_retired else STRATEGY_PRIOR,
                "promising" if measured else "provisional",
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
            "track": measured_track(entry),
        },
    }


def measurements(entry: Entry) -> int:
    """How many times GEAK measured the entry's code: its ``reproductions``, the first
    included (a missing or zero count is one, as GEAK reads it)."""
    return max(1, count(entry.meta.get("reproductions"), 1))


def measurement_keys(entry: Entry, first: int = 2) -> list[str]:
    """One confirm key per measurement of the entry's code from the ``first``-th on, so a
    re-import counts only new ones."""
    return [f"geak:{entry.where}#{n}" for n in range(first, measurements(entry) + 1)]


def measured_track(entry: Entry) -> dict:
    keys = measurement_keys(entry)
    return rec.new_track(verified_effective=len(keys)) | {"confirm_keys": keys}


def anti_strategies(entry: Entry, parent: dict) -> list[dict]:
    """The structured dead ends as anti-strategy candidates (the gates decide)."""
    out = []
    scrub = scrubber()
    hw = entry.hardware
    stamp = entry.stamp
    for n, item in enumerate(entry.meta.get("dead_ends") or [], 1):
        if isinstance(item, str):
            item = {"what": item}
        if not isinstance(item, dict):
            continue
        attempted = _prose(scrub, item.get("what") or item.get("attempted") or item.get("idea"))
        why = _prose(scrub, item.get("why") or item.get("mechanism") or item.get("reason"))
        if not attempted:
            continue
        technique = slug(attempted, 40) or "dead-end"
        out.append(
            {
                "schema": rec.SCHEMA_NAME,
                "id": f"{hw.vendor}.{entry.gfx}.{_dsl(entry)}.misc.anti."
                f"{technique}-{stamp}-t{n:02d}",
                "type": "anti-strategy",
                "level": "operator",
                "status": "active",
                "episode_key": f"{hw.arch}|{entry.language}|{slug(entry.kernel)}|"
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
                        "condition": {"sm_arch": entry.gfx, "toolchain": entry.language},
                        "mechanism": why,
                    },
                },
                "evidence": {
                    "summary": {"confidence": "documented"},
                    "raw": {"detail_file": f"geak:{entry.where}"},
                },
                "worth": {
                    "rank": _rank(ANTI_STRATEGY_PRIOR, "cautionary"),
                    "gain": {"basis": "qualitative", "kind": "none", "pct": None, "metrics": []},
                    "track": rec.new_track(),
                },
            }
        )
    return out


def _geak_lines(ledger: Ledger | None) -> list[dict]:
    return [e for e in (ledger.events if ledger else []) if e.get("source") == "geak"]


def attest_events(entry: Entry, known: Ledger | None = None) -> list[dict]:
    """GEAK's attestation ledger (``meta.attestations``) as the ledger lines ``known`` (the
    record's ledger in the store) does not hold yet: one ``attest`` line per history item
    not there (matched on time and outcome), then a tally line for counts beyond those."""
    scrub = scrubber()
    att = mapping(entry.meta.get("attestations"))
    held = _geak_lines(known)
    seen_items = {(e.get("at"), e.get("outcome")) for e in held if e.get("event") == "attest"}
    events = []
    for item in (h for h in att.get("history") or [] if isinstance(h, dict)):
        outcome, at = item.get("outcome"), str(item.get("at") or "")
        if outcome not in OUTCOMES or (at, outcome) in seen_items:
            continue
        seen_items.add((at, outcome))
        by = scrub.text(str(item.get("by") or "geak"))
        events.append({"event": "attest", "at": at, "outcome": outcome, "by": by,
                       "source": "geak"})  # fmt: skip
    have = Ledger("", events=held + events).counts()
    rest = {k: count(att.get(k)) - have[k] for k in _COUNTS if att.get(k) is not None}
    rest = {k: v for k, v in rest.items() if v > 0}
    if rest:
        events.append({"event": "attest-counts", "counts": rest, "source": "geak"})
    return events


def retired_reason(entry: Entry) -> str:
    """Why GEAK's curation retired the entry, in words fit for a retract line."""
    stated = _prose(scrubber(), str(entry.meta.get("retired_reason") or ""))
    return " ".join(stated.split()) or "retired in the GEAK store (retained: false)"


def ledger_events(entry: Entry, record: dict) -> list[dict]:
    """The lines a newly imported record's ledger starts with: its attestations, and the
    retract line of a retired entry."""
    events = attest_events(entry)
    if record["status"] == "deprecated":
        events.append(
            event_line(
                "retract",
                reason=retired_reason(entry),
                by="geak import",
                was={"status": "active", "score": STRATEGY_PRIOR},
            )
        )
    return events
