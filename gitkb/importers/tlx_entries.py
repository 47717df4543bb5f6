"""TLX knowledge entries -> hand-written (documented) technique cards of this store.

The TLX kernel optimization agent reads human-reviewed Markdown: in its flat layout
``harnesses/<arch>/knowledge.md`` (architecture-wide) and
``harnesses/<arch>/targets/<kernel>/optimization_guidance.md`` (one kernel's), in its
manifest layout ``<vendor>/<topic>/manifest.json`` naming its ``documents`` and the
``architectures`` they are for. An entry is a top-level bullet under a section heading;
its lead is its bold opening (else its first sentence). TLX's documents state
mechanisms and cite where the evidence lives; by their own rule they copy no measured
figure. So each entry becomes what clean-1.3 has for knowledge no trace measured, as the
GPU-wiki keeps its own: a technique card stating no aggregate (``technique``: the lead,
``what``: the entry, ``when``: its section heading, which carries the document's own
standing for it, such as "hypotheses, not established here"), ``evidence.summary.
confidence`` ``documented``, ``worth.gain.basis`` ``qualitative``, the file and section
in ``evidence.raw``. The entry's words stay as written (scrubbed as every importer's
prose is): the index cache maps them onto the technique vocabulary where they match, and
words it does not know stay verbatim. A document gitkb's own export wrote is skipped (its
claims are a store's records already), as is one of hardware gitkb does not know.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gitkb import record as rec
from gitkb import targets
from gitkb.errors import RecordError
from gitkb.importers import ImportReport
from gitkb.store import Store
from gitkb.store.view import StoreView
from gitkb.store.writer import Builder, Change
from gitkb.trace.scrub import Scrubber

KIND = "tlx-knowledge"
DSL = "any"  # TLX documents are about an architecture, for Triton and TLX code alike
EXPORT_MARK = "Exported from a gitkb store"  # the first paragraph of gitkb's own export
VENDORS = ("nvidia", "amd")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^[-*]\s+(\S.*)$")
_BOLD_LEAD = re.compile(r"^\*\*(.+?)\*\*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_LEAD_CAP = 160


@dataclass(frozen=True)
class Document:
    """One TLX knowledge file and what it is about."""

    path: str  # relative to the tree, with ``/``
    hardware: targets.Hardware
    kernel: str  # "" for architecture-wide knowledge
    text: str


@dataclass
class Entry:
    """One bullet of a document, under its section heading."""

    section: str
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.lines).split())

    @property
    def lead(self) -> str:
        bold = _BOLD_LEAD.match(self.text)
        if bold:
            return bold.group(1).strip()
        return _SENTENCE_END.split(self.text, maxsplit=1)[0][:_LEAD_CAP].strip()


def slug(text: str, limit: int = 48) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")


def entries(text: str) -> Iterator[Entry]:
    """The top-level bullets of a Markdown document under a section heading (level 2 or
    deeper), code blocks skipped, each with its indented continuation lines."""
    section, current, fenced = "", None, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if fenced or heading or not line.strip():
            if current is not None:
                yield current
            current = None
            if heading and len(heading.group(1)) >= 2:
                section = heading.group(2)
            continue
        bullet = _BULLET.match(line)
        if bullet and section:
            if current is not None:
                yield current
            current = Entry(section, [bullet.group(1)])
        elif current is not None and line[:1].isspace():
            current.lines.append(line.strip())
    if current is not None:
        yield current


def _hardware(names: list[str]) -> targets.Hardware | None:
    table = targets.table()
    return next((table[n] for n in (str(n).strip().lower() for n in names) if n in table), None)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def documents(root: Path, report: ImportReport) -> list[Document]:
    """Every knowledge document under ``root``, in both layouts; the ones that cannot be
    placed on known hardware are listed in ``report.skipped``."""
    found: list[Document] = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if "harnesses" not in parts or path.is_symlink():
            continue
        at = parts.index("harnesses")
        tail = parts[at + 1 :]
        wide = len(tail) == 2 and tail[1] == "knowledge.md"
        own = len(tail) == 4 and tail[1] == "targets" and tail[3] == "optimization_guidance.md"
        if not (wide or own):
            continue
        hardware = _hardware([tail[0]])
        if hardware is None:
            report.skipped.append({"entry": rel, "reason": f"{tail[0]!r} is no GPU gitkb knows"})
            continue
        found.append(Document(rel, hardware, tail[2] if own else "", _read(path)))
    for manifest in sorted(root.rglob("manifest.json")):
        found += _manifest_documents(root, manifest, report)
    return found


def _manifest_documents(root: Path, manifest: Path, report: ImportReport) -> list[Document]:
    rel = manifest.relative_to(root).as_posix()
    try:
        data = json.loads(_read(manifest))
    except ValueError as exc:
        report.skipped.append({"entry": rel, "reason": f"not JSON: {exc}"})
        return []
    listed = data.get("documents") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        report.skipped.append({"entry": rel, "reason": "a manifest lists its documents"})
        return []
    names = [str(a) for a in data.get("architectures") or []]
    vendor = manifest.parent.parent.name
    hardware = _hardware(names)
    if hardware is None and not names and vendor in VENDORS:
        hardware = targets.Hardware(vendor, "generic", None, "generic", None)
    if hardware is None:
        report.skipped.append({"entry": rel, "reason": f"architectures {names} name no GPU "
                               "gitkb knows"})  # fmt: skip
        return []
    out = []
    for name in listed:
        path = manifest.parent / str(name)
        inside = path.resolve().is_relative_to(root.resolve())
        if not inside or path.is_symlink() or not path.is_file():
            report.skipped.append({"entry": f"{rel}: {name}", "reason": "no such document"})
            continue
        out.append(Document(path.relative_to(root).as_posix(), hardware, "", _read(path)))
    return out


def _title(document: Document) -> str:
    heading = next((_HEADING.match(line) for line in document.text.splitlines()
                    if _HEADING.match(line)), None)  # fmt: skip
    return heading.group(2) if heading else document.path


def card(document: Document, entry: Entry, scrub: Scrubber, taken: set[str]) -> dict:
    """One entry's documented technique card (``taken``: the ids given so far)."""
    hw, kernel = document.hardware, slug(document.kernel)
    stem = f"{kernel}-guidance" if kernel else slug(Path(document.path).stem)
    lead, text = scrub.text(entry.lead), scrub.text(entry.text)
    base = f"{hw.vendor}.{slug(hw.token)}.{DSL}.tlx-knowledge.{stem}.{slug(lead) or 'entry'}"
    record_id, n = base, 1
    while record_id in taken:
        n += 1
        record_id = f"{base}-{n}"
    taken.add(record_id)
    level = "operator" if kernel else "cross-operator"
    target = f"{hw.vendor.upper()} {hw.token} ({hw.arch})"
    section = scrub.text(entry.section)
    return {
        "schema": rec.SCHEMA_NAME,
        "id": record_id,
        "type": "technique-card",
        "level": level,
        "status": "active",
        "episode_key": f"{hw.arch}|{DSL}|{kernel or 'any'}|{slug(lead) or 'entry'}|{level}",
        "retrieval": {
            "scope": {
                "vendor": hw.vendor,
                "arch": hw.arch,
                "product": hw.product,
                "dsl": DSL,
                "operator_family": kernel or None,
                "operators": [kernel] if kernel else [],
            },
            "generality": {"arch": hw.arch, "language": DSL},
            "signals": {
                "metrics": {},
                "shape_regime": {"predicate": "*", "var_axes": []},
                "symptoms": [],
            },
            "technique_tags": [slug(lead) or "entry"],
            "triggers": [f"optimizing a kernel on {target}"],
        },
        "payload": {
            "goal": f"Optimization knowledge for {target}: {lead}",
            "problem": {
                "target": target,
                "statement": f"{scrub.text(_title(document))} -- {section}",
            },
            "technique": lead,
            "what": text,
            "when": section,
            "caveats": [],
        },
        "evidence": {
            "summary": {"confidence": "documented"},
            "raw": {"detail_file": f"tlx:{document.path}", "page_anchor": slug(entry.section)},
        },
        "worth": {
            "rank": {"score": 0.4, "tier": "provisional"},
            "gain": {"basis": "qualitative", "kind": "none", "pct": None, "metrics": []},
        },
    }


def import_tree(store: Store, folder: Path, dry_run: bool = False) -> ImportReport:
    """Admit every entry of the TLX knowledge tree at ``folder`` not yet in the store, in
    one import commit, after the record gates pass on each (an entry they refuse is
    listed with the reason)."""
    root = Path(os.fspath(folder))
    report = ImportReport(KIND, None, dry_run=dry_run)
    found = documents(root, report)
    if not found and not report.skipped:
        raise RecordError(f"{root}: no TLX knowledge documents (harnesses/<arch>/knowledge.md, "
                          "<vendor>/<topic>/manifest.json)")  # fmt: skip
    scrub, taken, records = Scrubber(), set[str](), list[dict]()
    view = store.view()
    for document in found:
        if EXPORT_MARK in document.text:
            report.skipped.append({"entry": document.path, "reason": "a gitkb export: its "
                                   "claims are a store's records already"})  # fmt: skip
            continue
        for entry in entries(document.text):
            record = card(document, entry, scrub, taken)
            where = f"{document.path} ({entry.section}): {entry.lead[:60]}"
            if record["id"] in view:
                report.notes.append({"entry": where, "note": f"{record['id']} already here"})
                continue
            _, findings = store.check_record(record, rec.path_for(record))
            if findings:
                reason = "; ".join(f"{f.gate}: {f.message}" for f in findings[:3])
                report.skipped.append({"entry": where, "reason": reason})
                continue
            records.append(record)
            report.steps.append({"action": "import", "record": record["id"],
                                 "entries": [where], "detail": ""})  # fmt: skip
    report.imported = len(records)
    if dry_run or not records:
        return report
    [admission] = store.commit([_change(root.resolve().name, records, report)])
    report.commit = admission.commit
    report.commits = [admission.commit] if admission.commit else []
    return report


def _change(name: str, records: list[dict], report: ImportReport) -> Builder:
    def build(view: StoreView) -> Change:
        edits: dict[str, bytes | None] = {
            rec.path_for(r): rec.dumps(r) for r in records if r["id"] not in view
        }
        return Change(
            "import",
            f"{KIND}:{name}",
            edits,
            body=f"Imported {len(edits)} TLX knowledge entries as documented technique "
            f"cards; {len(report.skipped)} not importable.",
            trailers=[("KB-Source", KIND), ("KB-Records", str(len(edits)))],
        )

    return build
