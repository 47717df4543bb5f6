"""The audit folder ``resolve --out`` writes before any verdict is made.

``candidates/NN/`` holds each rank's code (a strategy's diff, plus the patched
kernel when the caller's kernel file was given and the diff applies),
alternates under ``candidates/NN/alternates/<id>/``; ``kb_references/`` holds
each rank rendered for a human and an index, so a rejected warm start is still
auditable. Candidates whose diff does not apply to the caller's kernel are no
rank: they are rendered too (``reference_only_NN.md``) and listed in the index
under "Reference only", for their prose.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gitkb.errors import GitkbError
from gitkb.record.curation import code_of, reproductions
from gitkb.warmstart import curate, geak

_EXTENSIONS = {"triton": ".py", "gluon": ".py", "cutedsl": ".py", "flydsl": ".py", "cuda": ".cu"}


def _folded(line: str) -> str:
    return "".join(line.split())


def apply_diff(diff: str, source: str) -> str | None:
    """``source`` with the diff's hunks applied, or None when a hunk's old side is not found.

    Hunks are matched by content (whitespace folded), not line numbers, in order;
    a snippet without ``@@`` headers is one hunk.
    """
    hunks: list[tuple[list[str], list[str]]] = []
    old: list[str] = []
    new: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("diff --git", "index ", "+++", "---")):
            continue
        if line.startswith("@@"):
            if old or new:
                hunks.append((old, new))
            old, new = [], []
            continue
        sign, text = (line[:1], line[1:]) if line[:1] in ("+", "-", " ") else (" ", line)
        if sign in (" ", "-"):
            old.append(text)
        if sign in (" ", "+"):
            new.append(text)
    if old or new:
        hunks.append((old, new))
    lines = source.splitlines()
    start = 0
    for old, new in hunks:
        wanted = [_folded(x) for x in old]
        folded = [_folded(x) for x in lines]
        at = next(
            (
                i
                for i in range(start, len(lines) - len(old) + 1)
                if folded[i : i + len(old)] == wanted
            ),
            None,
        )
        if at is None or not old:
            return None
        lines[at : at + len(old)] = new
        start = at + len(new)
    return "\n".join(lines) + ("\n" if source.endswith("\n") else "")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_code(folder: Path, record: dict, kernel_file: Path | None) -> tuple[str, bool | None]:
    """Write a record's code into ``folder``; return the code path and whether it applies."""
    kind, text = code_of(record)
    dsl = record["retrieval"]["scope"].get("dsl")
    ext = kernel_file.suffix if kernel_file else _EXTENSIONS.get(dsl, ".txt")
    if kind == "source":
        _write(folder / f"kernel{ext}", text)
        dispatch = record["payload"]["implementation"].get("dispatch_snippet")
        if isinstance(dispatch, str) and dispatch.strip():
            _write(folder / f"dispatch{ext}", dispatch)
        return str(folder / f"kernel{ext}"), None
    _write(folder / "change.diff", text)
    if kernel_file is None:
        return str(folder / "change.diff"), None
    patched = apply_diff(text, kernel_file.read_text(encoding="utf-8", errors="replace"))
    if patched is None:
        return str(folder / "change.diff"), False
    _write(folder / f"kernel{ext}", patched)
    return str(folder / f"kernel{ext}"), True


def _as_markdown(value: object) -> str:
    """A string stripped, or a list of strings as markdown bullets; "" for anything else."""
    if isinstance(value, list):
        return "\n".join(f"- {v}" for v in value if isinstance(v, str) and v.strip())
    return value.strip() if isinstance(value, str) else ""


def render(rank: dict, record: dict, pitfalls: list[dict]) -> str:
    """One rank (or a reference-only candidate: ``rank['reason']`` says why it is no rank)
    as markdown: speedup, bench, direction, mechanism, what did not work, provenance."""
    payload = record.get("payload") or {}
    problem = payload.get("problem") or {}
    raw = (record.get("evidence") or {}).get("raw") or {}
    gain = (record.get("worth") or {}).get("gain") or {}
    reference_only = "reason" in rank
    title = "Reference only" if reference_only else f"Rank {rank['rank']}"
    lines = [
        f"# {title}: {record.get('id')}",
        "",
        f"- type: {record.get('type')}; status: {record.get('status')}",
        f"- speedup: {rank['speedup']}x (basis {gain.get('basis')})",
        f"- bench key: {rank['bench_key'] or 'none (not comparable)'}"
        + ("" if reference_only else f" (comparable with rank 1: {rank['comparable']})"),
        f"- direction: {rank['direction'] or '(none)'}; techniques: "
        + (", ".join(record.get("retrieval", {}).get("technique_tags") or []) or "(none)"),
        f"- reproductions: {reproductions(record)}; attestations: "
        + json.dumps(rank.get("attestations", {})),
        f"- retire hint: {rank['retire_hint'] or 'none'}",
        (
            f"- reference only: {rank['reason']}"
            if reference_only
            else f"- applies to the given kernel file: {rank.get('applies')}"
        ),
        "",
        "## Problem",
        "",
        _as_markdown(problem.get("statement")) or "(not stated)",
        "",
        "## Change",
        "",
        _as_markdown(payload.get("change")) or _as_markdown(payload.get("goal")) or "(not stated)",
        "",
        "## Mechanism",
        "",
        _as_markdown(payload.get("mechanism")) or "(not stated)",
        "",
        "## What did not work",
        "",
    ]
    dead_ends = _as_markdown(raw.get("dead_ends_md")) or _as_markdown(raw.get("dead_ends"))
    for pitfall in pitfalls:
        p = pitfall.get("payload") or {}
        attempted, lesson = _as_markdown(p.get("attempted")), _as_markdown(p.get("lesson"))
        dead_ends += f"\n- {attempted} ({p.get('verdict')}): {lesson}"
    lines += [dead_ends.strip() or "(nothing recorded)", "", "## Provenance", ""]
    for key in ("source_repo", "version", "git_commit", "detail_file"):
        if raw.get(key):
            lines.append(f"- {key}: {raw[key]}")
    lines.append(f"- record: {rank['record_path']}")
    if rank.get("alternates"):
        lines += ["", "## Alternates (same direction)", ""]
        lines += [
            f"- {a['id']}: {a['speedup']}x, bench {a['bench_key']}" for a in rank["alternates"]
        ]
    return "\n".join(lines) + "\n"


def write_out(
    out: Path,
    answer: dict,
    ranks: list[curate.CodeRecord],
    reference_only: list[curate.CodeRecord],
    pitfalls: list[dict],
    kernel_file: Path | None,
) -> None:
    """Write candidates/, kb_references/ and resolve.json under ``out``; fill the answer's
    code and prose paths."""
    for name in ("candidates", "kb_references"):
        if (out / name).exists() and any((out / name).iterdir()):
            raise GitkbError(f"{out / name} exists and is not empty; resolve into a new folder")
    answer["out"] = str(out)
    index_lines = [
        f"# Warm-start references for {answer['kernel']['query']} on {answer['hardware']['arch']}",
        "",
        f"Store commit {answer['commit']}; read_reason {answer['read_reason']}.",
        "",
        "| rank | record | speedup | comparable | reproductions | retire hint | prose |",
        "|---|---|---|---|---|---|---|",
    ]
    for rank, candidate in zip(answer["ranks"], ranks, strict=True):
        folder = out / "candidates" / f"{rank['rank']:02d}"
        rank["code_path"], rank["applies"] = _write_code(folder, candidate.record, kernel_file)
        for alt_json, alt in zip(rank["alternates"], candidate.alternates, strict=True):
            alt_json["code_path"], _ = _write_code(
                folder / "alternates" / alt.record_id, alt.record, kernel_file
            )
        prose = out / "kb_references" / f"reference_{rank['rank']:02d}.md"
        _write(prose, render(rank, candidate.record, pitfalls))
        rank["prose_path"] = str(prose)
        index_lines.append(
            f"| {rank['rank']} | {rank['id']} | {rank['speedup']}x | {rank['comparable']} | "
            f"{rank['reproductions']} | {rank['retire_hint'] or ''} | {prose.name} |"
        )
    if not answer["ranks"]:
        index_lines.append(f"| - | nothing offered ({answer['read_reason']}) | | | | | |")
    if reference_only:
        index_lines += [
            "",
            "## Reference only",
            "",
            "Not offered as code (their code does not fit this kernel); read them for the idea.",
            "",
            "| record | speedup | why not a rank | prose |",
            "|---|---|---|---|",
        ]
    for n, (entry, candidate) in enumerate(zip(answer["reference_only"], reference_only,
                                               strict=True), 1):  # fmt: skip
        prose = out / "kb_references" / f"reference_only_{n:02d}.md"
        _write(prose, render(entry, candidate.record, pitfalls))
        entry["prose_path"] = str(prose)
        index_lines.append(
            f"| {entry['id']} | {entry['speedup']}x | {entry['reason']} | {prose.name} |"
        )
    _write(out / "kb_references" / "index.md", "\n".join(index_lines) + "\n")
    _write(out / "resolve.json", json.dumps(answer, indent=1, ensure_ascii=False) + "\n")


def note_tried(references: Path, tried: list[dict]) -> None:
    """After a run judged the offered ranks: list those whose code did not hold up on this
    box (``tried``: record, outcome, experiment, prose path) under a "Reference only"
    heading of ``index.md``, so the run's agents read them for the idea, not the code."""
    if not tried:
        return
    lines = [
        "",
        "## Reference only: tried in this run",
        "",
        "Their code did not hold up here (the outcome is on each record's ledger); read them "
        "for the idea, do not adopt them again.",
        "",
        "| record | outcome | experiment | prose |",
        "|---|---|---|---|",
    ]
    for item in tried:
        prose = Path(item["prose_path"]).name if item.get("prose_path") else ""
        lines.append(f"| {item['record']} | {item['outcome']} | {item['experiment']} | {prose} |")
    index = references / "index.md"
    text = index.read_text(encoding="utf-8") if index.is_file() else ""
    _write(index, text + "\n".join(lines) + "\n")


def write_geak_out(
    out: Path, answer: dict, ranks: list[curate.CodeRecord]
) -> tuple[Path, list[str]]:
    """GEAK's lane layout, written before any verdict: every offered entry and its
    alternates as ``kb_artifacts/<gfx>/<kernel_class>/<slug>/<exp_id>/`` (meta.yaml,
    patch.diff, report.md), and the prose as ``kb_references/index.md`` and
    ``kb_references/sets/<digest>/reference_NN.md``; (the kb_artifacts root, prose paths)."""
    root = out / "kb_artifacts"
    wheres = []
    for candidate in [*ranks, *(alt for c in ranks for alt in c.alternates)]:
        found = geak.files_of(candidate)
        if found is None:
            continue
        where, files = found
        wheres.append(where)
        for name, data in files.items():
            _write(root / where / name, data.decode())
    refs = out / "kb_references"
    digest = hashlib.sha256("|".join(wheres[: len(ranks)]).encode()).hexdigest()[:7]
    kernel = answer["kernel"]["query"]
    index = [f"# Warm-start references — {kernel} ({answer['commit'] or 'empty store'})", ""]
    paths = []
    for n, candidate in enumerate(ranks, 1):
        path = refs / "sets" / digest / f"reference_{n:02d}.md"
        record = candidate.record
        _write(path, (
            f"# Reference {n:02d} — {kernel}\n\n"
            f"- speedup: {candidate.speedup or 0.0:.4f}x "
            f"(bench `{candidate.bench_key or 'none'}`)\n"
            f"- direction: {candidate.direction or 'unlabeled'}\n"
            f"- gitkb record: {candidate.record_id}\n"
            f"- same-direction alternates: {len(candidate.alternates)}\n\n---\n\n"
            f"{geak.report_of(record)}"
        ))  # fmt: skip
        paths.append(str(path))
        index.append(f"- Rank {n}: `{path}` | speedup {candidate.speedup or 0.0:.4f}x | "
                     f"direction `{candidate.direction or 'unlabeled'}` | "
                     f"{len(candidate.alternates)} alternate(s) | status `read`")  # fmt: skip
    _write(refs / "index.md", "\n".join(index) + "\n")
    return root, paths
