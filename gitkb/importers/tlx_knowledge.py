"""The store as the TLX kernel optimization agent's own knowledge: Markdown selected by manifests.

TLX reads ``<vendor>/<topic>/manifest.json`` (``priority``, ``backends``,
``architectures``, ``documents``); a manifest matches a target when each list is
empty or holds the target's backend / architecture (names lower-cased, ``-`` and
spaces as ``_``); the matching manifests, sorted by (priority, documents), give
their documents in that order, each headed ``--- <file> (<dir>) ---``, the whole
capped at 16,384 bytes. Its older flat layout reads one
``optimization_guidance.md`` per target.

One topic per vendor, architecture and operator family: a vendor's
architecture-neutral records (``generic``, priority 0, any architecture) come
first, then each architecture (10), then each of its families (20), so the widest
knowledge leads and the cap trims the narrowest. Each entry names its canonical
technique (and a symptom card's levers theirs) where the technique vocabulary knows it;
words it does not know stay as written. A document states mechanisms in
prose, numbers only as the record states them, and cites each claim's record id
and evidence; what a trace measured on this architecture is kept apart from what
is documented, and other hardware's records stay in their own topics.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gitkb import targets
from gitkb.errors import GitkbError, writing
from gitkb.store import Store
from gitkb.trace import techniques
from gitkb.util.files import atomic_write

CONTEXT_CAP_BYTES = 16_384
DOCUMENT = "knowledge.md"
FLAT_DOCUMENT = "optimization_guidance.md"
TYPES = ("strategy", "anti-strategy", "technique-card", "symptom-card")
# The backend names a TLX target.json may give for each vendor.
# (``generic``: records of no vendor, for any backend.)
BACKENDS = {
    "nvidia": ["cuda", "nvidia"],
    "amd": ["amd", "hip", "rocm"],
    "cpu": ["cpu", "host"],
    "generic": [],
}
GENERIC_ARCHS = frozenset({"generic", "any", ""})
PRIORITY = {"vendor": 0, "arch": 10, "family": 20}


def normalize(name: str) -> str:
    """TLX's name rule: lower case, ``-`` and spaces as ``_``."""
    return str(name).strip().lower().replace("-", "_").replace(" ", "_")


@dataclass
class Topic:
    """One manifest and its document: the records of one vendor, architecture and family."""

    vendor: str
    name: str
    priority: int
    architectures: list[str]
    heading: str
    records: list[dict] = field(default_factory=list)

    @property
    def folder(self) -> str:
        return f"{self.vendor}/{self.name}"

    def manifest(self) -> dict:
        return {
            "priority": self.priority,
            "backends": BACKENDS.get(self.vendor, [self.vendor]),
            "architectures": self.architectures,
            "documents": [DOCUMENT],
        }

    def document(self) -> str:
        return render(self.heading, self.records)


def _arch_tokens(arch: str) -> list[str]:
    """Every name the hardware table gives ``arch`` (hopper: h100, sm_90, ...), TLX-normalized."""
    names = {normalize(arch)}
    names |= {normalize(t) for t, hw in targets.table().items() if hw.arch == arch}
    return sorted(names)


def _scope(record: dict) -> tuple[str, str, str]:
    scope = (record.get("retrieval") or {}).get("scope") or {}
    generality = (record.get("retrieval") or {}).get("generality") or {}
    family = scope.get("operator_family") or generality.get("workload_family") or "any"
    return str(scope.get("vendor") or "unknown"), str(scope.get("arch") or "generic"), str(family)


def topics(records: Iterable[dict]) -> list[Topic]:
    """The records (live ones of TYPES) grouped into topics, widest first."""
    found: dict[str, Topic] = {}
    for record in records:
        if record.get("type") not in TYPES or record.get("status") == "retracted":
            continue
        vendor, arch, family = _scope(record)
        if arch in GENERIC_ARCHS:
            key, topic = f"{vendor}/generic", Topic(
                vendor, "generic", PRIORITY["vendor"], [],
                f"{vendor}: architecture-neutral (measured, if at all, on other hardware)",
            )  # fmt: skip
        elif family in GENERIC_ARCHS:
            key, topic = (
                f"{vendor}/{arch}",
                Topic(
                    vendor,
                    normalize(arch),
                    PRIORITY["arch"],
                    _arch_tokens(arch),
                    f"{vendor} {arch}",
                ),
            )
        else:
            name = f"{normalize(arch)}__{normalize(family)}"
            key, topic = (
                f"{vendor}/{name}",
                Topic(
                    vendor,
                    name,
                    PRIORITY["family"],
                    _arch_tokens(arch),
                    f"{vendor} {arch}: {family}",
                ),
            )
        found.setdefault(key, topic).records.append(record)
    for topic in found.values():
        topic.records.sort(key=lambda r: (TYPES.index(r["type"]), str(r.get("id"))))
    return sorted(found.values(), key=lambda t: (t.priority, t.folder))


# --------------------------------------------------------------------------- the documents


def _one_line(value: object) -> str:
    """A scalar as one line of text (whitespace runs folded); "" for anything else."""
    return " ".join(str(value).split()) if isinstance(value, str | int | float) else ""


def _evidence(record: dict) -> str:
    """Where the record's evidence lives, as the record names it."""
    raw = (record.get("evidence") or {}).get("raw") or {}
    parts = []
    for key, label in (
        ("trace_label", "trace"),
        ("source_repo", "trace"),
        ("git_commit", "commit"),
        ("page_path", "page"),
    ):
        if isinstance(raw.get(key), str) and raw[key]:
            parts.append(f"{label} `{raw[key]}`")
    return ", ".join(parts) or "the record itself"


def _measured(record: dict) -> bool:
    gain = (record.get("worth") or {}).get("gain") or {}
    return gain.get("basis") == "measured"


def _numbers(record: dict) -> list[str]:
    """The record's own numbers, verbatim: its gain and its metrics' deltas."""
    gain = (record.get("worth") or {}).get("gain") or {}
    out = []
    if isinstance(gain.get("pct"), int | float) and not isinstance(gain["pct"], bool):
        out.append(f"gain {gain['pct']}% ({gain.get('basis')}, {gain.get('kind')})")
    for metric in gain.get("metrics") or []:
        if isinstance(metric, dict) and metric.get("delta_pct") is not None:
            out.append(f"{metric.get('name', 'metric')} {metric['delta_pct']}%")
    return out


def _claims(record: dict) -> list[str]:
    """The mechanism in prose: what the record says, field by field, for its type."""
    payload = record.get("payload") or {}
    kind = record["type"]
    fields: tuple[tuple[str, object], ...]
    if kind == "strategy":
        fields = (("Change", payload.get("change")), ("Why", payload.get("mechanism")))
    elif kind == "anti-strategy":
        fact = payload.get("established_fact") or {}
        condition = ", ".join(f"{k} {v}" for k, v in (fact.get("condition") or {}).items() if v)
        fields = (
            ("Tried", payload.get("attempted")),
            ("Why it fails", fact.get("mechanism") or payload.get("root_cause")),
            ("When", condition),
            ("Lesson", payload.get("lesson")),
        )
    elif kind == "technique-card":
        fields = (("What", payload.get("what")), ("When", payload.get("when")))
    else:
        levers = [t.get("technique") for t in payload.get("candidate_techniques") or [] if t]
        fields = (
            ("Symptom", (payload.get("problem") or {}).get("bottleneck")),
            ("Levers", ", ".join(_lever(str(t), record) for t in levers if t)),
        )
    claims = [f"{label}: {_one_line(value)}" for label, value in fields if _one_line(value)]
    if kind in ("strategy", "anti-strategy", "technique-card"):
        detection = techniques.record_technique(record)
        if detection.categorized:
            claims.append(
                f"Technique: {detection.key} (gitkb technique vocabulary {detection.version})"
            )
    return claims


def _lever(words: str, record: dict) -> str:
    """A symptom card's lever in its own words, with the vocabulary's name for it where the
    words name one (unknown words stay as they are)."""
    scope = (record.get("retrieval") or {}).get("scope") or {}
    dsl = scope.get("dsl") if isinstance(scope.get("dsl"), str) else None
    detection = techniques.vocabulary().detect("", words, dsl)
    return f"{words} [{detection.key}]" if detection.categorized else words


def _title(record: dict) -> str:
    payload = record.get("payload") or {}
    problem = payload.get("problem") or {}
    return _one_line(payload.get("technique") or payload.get("goal") or problem.get("statement"))


SECTIONS = (
    ("strategy", True, "What worked, measured by a trace"),
    ("strategy", False, "What worked, documented (no trace measured it)"),
    ("anti-strategy", None, "What not to repeat"),
    ("technique-card", None, "Techniques"),
    ("symptom-card", None, "Symptoms and their levers"),
)


def render(heading: str, records: list[dict]) -> str:
    """One topic's Markdown: a section per kind, a paragraph per record citing its id."""
    lines = [f"# {heading}", "", "Exported from a gitkb store; every claim names its record."]
    for kind, measured, title in SECTIONS:
        chosen = [
            r
            for r in records
            if r["type"] == kind and (measured is None or _measured(r) == measured)
        ]
        if not chosen:
            continue
        lines += ["", f"## {title}"]
        for record in chosen:
            lines += ["", f"### {_title(record) or record['id']}", f"Record `{record['id']}`."]
            lines += _claims(record)
            numbers = _numbers(record)
            if numbers:
                lines.append("Numbers as the record states them: " + "; ".join(numbers) + ".")
            lines.append(f"Evidence: {_evidence(record)}.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- selection


def matches(manifest: dict, backend: str | None, architecture: str | None) -> bool:
    """TLX's rule: each list empty, or holding the target's (normalized) name."""
    for key, value in (("backends", backend), ("architectures", architecture)):
        names = [normalize(n) for n in manifest.get(key) or []]
        if names and (value is None or normalize(value) not in names):
            return False
    return True


def joined(documents: list[tuple[str, str, str]], cap: int = CONTEXT_CAP_BYTES) -> str:
    """``(file, dir, text)`` in order, each headed ``--- <file> (<dir>) ---``, within ``cap``
    bytes (the rest cut at a character boundary)."""
    text = "\n\n".join(
        f"--- {name} ({folder}) ---\n{body.strip()}" for name, folder, body in documents
    )
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text
    return data[:cap].decode("utf-8", "ignore")


def context(
    found: list[Topic], backend: str | None, architecture: str | None, family: str | None = None
) -> tuple[str, list[str]]:
    """What TLX would put in the agent's context for this target, from the store's topics
    (``family``: only that family's topics beside the wide ones); the text and its files."""
    chosen = [
        t
        for t in found
        if matches(t.manifest(), backend, architecture)
        and (
            family is None or t.priority < PRIORITY["family"] or t.name.endswith(normalize(family))
        )
    ]
    chosen.sort(key=lambda t: (t.priority, t.manifest()["documents"]))
    documents = [(DOCUMENT, t.folder, t.document()) for t in chosen]
    return joined(documents), [f"{t.folder}/{DOCUMENT}" for t in chosen]


# --------------------------------------------------------------------------- the export


def store_records(store: Store) -> list[dict]:
    return [f.data for f in store.record_files(store.tip) if f.data is not None]


def export_tree(store: Store, folder: str | os.PathLike, target: dict | None = None) -> int:
    """Write every topic's manifest and document under ``folder``; with ``target`` (a
    target.json) also the flat layout's ``optimization_guidance.md`` for it. The count of
    topics written."""
    out = Path(folder)
    if out.exists() and any(out.iterdir()):
        raise GitkbError(f"{out} exists and is not empty; export into a new folder")
    found = topics(store_records(store))
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
        for topic in found:
            where = out / topic.vendor / topic.name
            atomic_write(where / "manifest.json", _dumps(topic.manifest()))
            atomic_write(where / DOCUMENT, topic.document().encode("utf-8"))
        if target is not None:
            text, _ = context(found, target.get("backend"), target.get("architecture"))
            atomic_write(out / FLAT_DOCUMENT, (text + "\n").encode("utf-8"))
    return len(found)


def _dumps(document: dict) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def read_target(path: str) -> dict:
    """A target.json for the flat export; one clear line when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GitkbError(f"--target: not a readable JSON file: {exc} ({path})") from None
    if not isinstance(data, dict) or not isinstance(data.get("backend"), str):
        raise GitkbError(f"--target: a target.json names its backend ({path})")
    return data
