"""Rendering the mining reports: recon.md, partition.md and mine.md, plus their JSON."""

from __future__ import annotations

import json


def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join("" if v is None else str(v) for v in row) + " |")
    return "\n".join(lines)


def recon_markdown(recon: dict) -> str:
    ident, cov = recon["identity"], recon["coverage"]
    target = ident["target"]
    out = [
        f"# Recon: {ident['operator']}",
        "",
        _table(
            ["field", "value"],
            [
                [
                    "operator / slug / family",
                    f"{ident['operator']} / {ident['slug']} / {ident['workload_family']}",
                ],
                ["operator named by", ident["operator_basis"]],
                ["trace label", ident["label"]],
                ["label from", ident.get("label_note") or ident.get("label_basis")],
                ["HEAD", ident["head"]],
                ["target", f"{target['vendor']} {target['arch']} {target['product'] or 'any'}"],
                ["hardware decided by", ident["hardware_basis"]],
                ["shapes", ident["n_shapes"]],
                ["constants / variable axes", f"{ident['constants']} / {ident['var_axes']}"],
            ],
        ),
        "",
        "DSL sequence: " + ", ".join(f"{d} x{n}" for d, n in recon["dsl_sequence"]),
        "",
        "## Coverage",
        "",
        _table(list(cov), [list(cov.values())]),
        "",
    ]
    cn = recon["citable_numbers"]
    caps = recon["captures"]
    out += [
        "## Evidence density",
        "",
        f"- citable-number share: {cn['milestones_with_geomean']} of {cn['milestones']} "
        f"milestones carry a geomean; {cn['versions_with_geomean']} of {cn['versions']} "
        "versions have usable numbers",
        f"- usable-capture share: {caps['usable']} of {caps['total']} profiler captures "
        "measured the kernel under test" + ("" if caps["total"] else " (no committed profiles)"),
        f"- REPORT.md files: {caps['reports']}",
        "",
        "## Ladder",
        "",
        _table(
            ["version", "kind", "geomean us", "% vs best", "reason"],
            [
                [s["version"], s["kind"], s["geomean_us"], s["improve_pct"], s["reason"]]
                for s in recon["ladder"]
            ],
        ),
        "",
        f"Terminal reference kernel: {recon['final_reference_kernel'] or 'none'}",
        "",
    ]
    if recon["rejections"]:
        out += ["Rejections: " + ", ".join(f"{k} x{v}" for k, v in recon["rejections"].items())]
        out.append("")
    if caps["unusable"]:
        out += ["## Unusable captures", ""]
        out += [f"- {c['dir']}: {c['reason']}" for c in caps["unusable"]]
        out.append("")
    if recon["degradations"] or recon["refused_paths"]:
        out += ["## Degraded versions and refused files", ""]
        out += [f"- {d['version']}: {'; '.join(d['problems'])}" for d in recon["degradations"]]
        out += [f"- {p}" for p in recon["refused_paths"]]
        out.append("")
    store = recon["store_coverage"]
    out += ["## Store coverage", ""]
    if store.get("store") is None:
        out.append("No store given.")
    else:
        sources = store["by_source_repo"]
        out.append(
            "Records of this operator by trace: "
            + (", ".join(f"{k} ({len(v)})" for k, v in sources.items()) or "none")
        )
        out.append(f"Highest id numbers: {store['highest_id_number'] or 'none'}")
    out.append("")
    if recon["long_horizon"]:
        out += ["Long-horizon episodes: see long-horizon.md.", ""]
    return "\n".join(out) + "\n"


def long_horizon_markdown(recon: dict, segments: list[dict]) -> str:
    """``long-horizon.md``: each episode's outcome, the figure its records use (the
    supervisor's authoritative gain over the geomean delta), its journal and records."""
    lh = recon["long_horizon"]
    by_version: dict[str, list[str]] = {}
    for segment in segments:
        by_version.setdefault(segment["version"], []).append(segment["seg_id"])
    rows = [
        [
            a["version"],
            a["episode"],
            a["status"],
            "yes" if a["promoted"] else "no",
            a["ladder"],
            a["authoritative_improvement_pct"],
            a["geomean_improvement_pct"],
            a["gain_pct_used"],
            f"{a['experiments']} ({len(a['rejected_experiments'])} rejected)",
            a["journal"] or "none",
            ", ".join(by_version.get(a["version"], [])),
        ]
        for a in lh["attempts"]
    ]
    headers = ["version", "episode", "status", "promoted", "ladder", "authoritative %",
               "geomean %", "gain % used", "experiments", "journal", "segments"]  # fmt: skip
    out = [
        f"# Long-horizon episodes: {recon['identity']['label']}",
        "",
        "The gain a promotion's records state is the supervisor's authoritative, same-"
        "allocation figure when its journal or memory states one; the geomean delta "
        "against the best earlier version is shown beside it.",
        "",
        _table(headers, rows),
        "",
        "Incumbent lineage: " + (" -> ".join(lh["incumbent_lineage"]) or "none"),
        "",
        "Status counts: " + ", ".join(f"{k} x{v}" for k, v in lh["status_counts"].items()),
        "",
        "Journals cited: " + (", ".join(lh["journals"]) or "none"),
    ]
    return "\n".join(out) + "\n"


def partition_markdown(segments: list[dict]) -> str:
    rows = [
        [s["seg_id"], s["record_type"], s["seg_kind"], s["id"], s.get("fact_precheck") or ""]
        for s in segments
    ]
    return "# Partition\n\n" + _table(["segment", "type", "kind", "id", "precheck"], rows) + "\n"


def mine_markdown(summary: dict) -> str:
    out = [
        f"# Mining {summary['label']}",
        "",
        f"- versions read: {summary['versions']}",
        f"- milestones: {summary['milestones']}, dead-ends: {summary['deadends']}, "
        f"pitfalls: {summary['pitfalls']}",
        f"- records: {summary['counts']}",
        "",
        _table(
            ["segment", "action", "record", "note"],
            [[o["seg_id"], o["action"], o["record_id"], o["note"]] for o in summary["outcomes"]],
        ),
        "",
        "## Fields the packets were too thin to fill",
        "",
    ]
    for record_type, fields in summary["missing_by_type"].items():
        out.append(f"- {record_type}: {', '.join(fields) or 'none'}")
    for record_type, fields in summary.get("fields_by_type", {}).items():
        out += ["", f"### {record_type}: fields filled from the trace", ""]
        rows = [
            [
                name,
                f"{c['filled']} of {c['records']}",
                "; ".join(f"{why} ({n})" for why, n in c["missing_because"].items()),
            ]
            for name, c in fields.items()
        ]
        out.append(_table(["field", "records with it", "why the others have none"], rows))
    skipped = [o for o in summary["outcomes"] if o["action"] == "skip" and o.get("lever")]
    if skipped:
        out += ["", "## Levers not kept", ""]
        out += ["A dead-end the trace stated but no record holds, with the reason:", ""]
        for o in skipped:
            out += [f"- {o['seg_id']}: {o['note']}", f"  > {_one_line(o['lever'])}"]
    return "\n".join(out) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def dumps(document: dict) -> bytes:
    return (json.dumps(document, indent=1, ensure_ascii=False, default=str) + "\n").encode()
