"""The trace's label (docs/trace-format.md, rule 15): an identifier, never a word to scrub.

The label is ``evidence.raw.source_repo`` of every record, and raw-isolation refuses a
served record that holds it anywhere. So a label that is part of what the records say (a
letter, ``kernel``, the operator's name, a phrase gitkb's own distiller writes, any word
of the trace's text or code) is replaced by a distinctive one, ``kernel_opt_<operator>_
<root commit>``, and the run says so. ``--label`` wins; a store that already holds this
trace keeps the label it was mined under, so a renamed folder admits nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from gitkb import layout, schema
from gitkb.errors import GitkbError
from gitkb.record.values import mapping
from gitkb.store import Store
from gitkb.trace import scrub
from gitkb.trace.files import JsonProblem, parse_json
from gitkb.trace.ingest import Ingest
from gitkb.trace.sources import usable_label

FROM_FLAG = "--label"
FROM_STORE = "the label this store already holds the trace under"
STORED_KEYS = ("label_basis", "label_instead_of", "label_reason")
CHOSEN = "chosen by gitkb"


@dataclass
class LabelChoice:
    label: str
    basis: str  # FROM_FLAG, FROM_STORE, the trace's own name (folder, trace_label), or CHOSEN
    instead_of: str = ""  # the trace's own name gitkb replaced (blank when it is private)
    reason: str = ""  # why it was replaced
    reused: bool = False  # the store holds the trace under this label already

    def note(self) -> str:
        """The line the run prints when the label is not the trace's own name."""
        if self.reused:
            return f"trace label {self.label!r}: {FROM_STORE}"
        if self.basis == CHOSEN:
            was = f" instead of {self.instead_of!r}" if self.instead_of else ""
            return f"trace label {self.label!r} chosen by gitkb{was}: {self.reason}"
        return ""

    def stored(self) -> dict:
        """What ``traces/<label>.json`` keeps of the choice (the first run's, when reused)."""
        document = {"label_basis": self.basis}
        if self.instead_of:
            document["label_instead_of"] = self.instead_of
        if self.reason:
            document["label_reason"] = self.reason
        return document


@cache
def vocabulary() -> str:
    """Every word a record of gitkb's own making may hold whatever the trace says: the
    record format's keys and enumerated values, and the built-in distiller's phrases."""
    from gitkb.mine.distill.builtin import PHRASES

    words: set[str] = {*PHRASES, *scrub.PLACEHOLDERS, *scrub.TRACE_WORDS}
    stack: list = [schema.load(schema.PROFILE)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            words.update(node.get("properties") or {})
            words.update(v for v in node.get("enum") or () if isinstance(v, str))
            if isinstance(node.get("const"), str):
                words.add(node["const"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return "\n".join(sorted(words)).lower()


def collision(label: str, ingested: Ingest) -> str:
    """Why ``label`` would be echoed by the records ("" when it would not)."""
    needle = label.lower()
    meta = ingested.meta
    if needle in vocabulary():
        return "is a word gitkb's records use"
    own = (meta.operator_name, meta.operator_slug, meta.workload_family, meta.vendor,
           meta.arch, meta.product or "", meta.harness)  # fmt: skip
    if any(needle in text.lower() for text in own):
        return "is part of the operator's name or target"
    if any(needle in text.lower() for text in ingested.texts()):
        return "occurs in the trace's own text or code"
    return ""


def distinctive_label(ingested: Ingest) -> str:
    operator = ingested.meta.operator_slug.replace("-", "_") or "unknown"
    return f"kernel_opt_{operator}_{ingested.root[:7]}"


def stored_label(store: Store | None, ingested: Ingest) -> LabelChoice | None:
    """The label the store holds this trace under (a trace ref whose tip is a commit of
    this trace: mined before, at this commit or an earlier one), as that run chose it."""
    if store is None:
        return None
    refs = store.repo.refs(layout.TRACE_REFS)
    found = sorted(
        label
        for name, tip in refs.items()
        if tip in ingested.commits
        and not collision(label := name.removeprefix(layout.TRACE_REFS), ingested)
    )
    if not found:
        return None
    raw = store.view().read_file(layout.TRACE_OPTIONS_PATH.format(label=found[0]))
    try:
        document = mapping(parse_json(raw)) if raw else {}
    except JsonProblem:
        document = {}
    kept = {k: document[k] for k in STORED_KEYS if isinstance(document.get(k), str)}
    return LabelChoice(
        found[0],
        kept.get("label_basis", FROM_STORE),
        kept.get("label_instead_of", ""),
        kept.get("label_reason", ""),
        reused=True,
    )


def choose_label(
    ingested: Ingest, own: str, own_basis: str, explicit: str | None, store: Store | None
) -> LabelChoice:
    """The run's label: ``--label``, else the store's, else the trace's own name unless
    it would collide or is private, else a distinctive one."""
    if explicit:
        reason = _private(explicit, ingested) or collision(explicit, ingested)
        if reason:
            raise GitkbError(
                f"--label {explicit!r} cannot name this trace: it {reason}, so every record "
                "would echo evidence.raw.source_repo; pass another --label, or none and "
                "gitkb picks one",
                2,
            )
        return LabelChoice(explicit, FROM_FLAG)
    held = stored_label(store, ingested)
    if held is not None:
        return held
    private = _private(own, ingested)
    reason = private or collision(own, ingested) or _unusable(own)
    if not reason:
        return LabelChoice(own, own_basis)
    chosen = distinctive_label(ingested)
    return LabelChoice(chosen, CHOSEN, "" if private else own, f"{own_basis} {reason}".strip())


def _private(label: str, ingested: Ingest) -> str:
    if ingested.scrubber.mentions_private(label):
        return "holds a denylisted term or a user name from the trace's paths"
    return ""


def _unusable(label: str) -> str:
    if not usable_label(label) or label.endswith("."):
        return "is not usable as a ref name (A-Z a-z 0-9 . _ -)"
    return ""
