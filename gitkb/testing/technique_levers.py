"""The technique detector scored on a set of levers labeled by hand.

Each lever of the set (``tests/data/techniques_labeled.json``) is a trace's sentence with
its diff and DSL, or a record named by id: a shipped example (``templates/examples``) or a
record of the public GPU-wiki sample, read at run time from its folder and never copied.
A lever's label is the canonical key a careful reader gives it ("" for a lever no
technique of the vocabulary names). ``score`` runs the detector as gitkb runs it (mining's
``detect``, the index cache's ``record_technique`` for a record) and counts: a categorized
prediction equal to the label is a true positive, any other categorized prediction a
false positive (and, for a labeled lever, a false negative too), an uncategorized one for
a labeled lever a false negative. Two levers of different labels given one key are a
merge: a card over them would mix two techniques.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitkb import record as rec
from gitkb.testing import trace as example_trace
from gitkb.trace import techniques
from gitkb.util.resources import data_dir


@dataclass(slots=True, frozen=True)
class Scored:
    """One lever: its label, what the detector said, and where it read it."""

    id: str
    origin: str
    label: str
    predicted: str
    source: str

    @property
    def right(self) -> bool:
        return self.label == self.predicted


@dataclass(slots=True, frozen=True)
class Score:
    levers: tuple[Scored, ...]
    skipped: tuple[str, ...]  # levers whose record is not here (the GPU-wiki sample absent)

    def _count(self, test: Callable[[Scored], object]) -> int:
        return sum(1 for lever in self.levers if test(lever))

    @property
    def true_positives(self) -> int:
        return self._count(lambda s: s.predicted and s.right)

    @property
    def false_positives(self) -> int:
        return self._count(lambda s: s.predicted and not s.right)

    @property
    def false_negatives(self) -> int:
        return self._count(lambda s: s.label and not s.right)

    @property
    def precision(self) -> float:
        predicted = self.true_positives + self.false_positives
        return self.true_positives / predicted if predicted else 1.0

    @property
    def recall(self) -> float:
        labeled = self.true_positives + self.false_negatives
        return self.true_positives / labeled if labeled else 1.0

    def merges(self) -> list[tuple[str, str, str]]:
        """(key, lever, lever) for each pair of differently labeled levers given one key."""
        out = []
        for n, a in enumerate(self.levers):
            for b in self.levers[n + 1 :]:
                if a.predicted and a.predicted == b.predicted and a.label != b.label:
                    out.append((a.predicted, a.id, b.id))
        return out

    def misses(self) -> list[Scored]:
        return [lever for lever in self.levers if not lever.right]


def labeled_set(path: str | Path) -> list[dict]:
    """The levers of a labeled-set file."""
    doc = json.loads(Path(path).read_text())
    return list(doc["levers"])


def _example_records() -> dict[str, dict]:
    root = data_dir("templates") / "examples" / "records"
    return {d["id"]: d for d in (json.loads(p.read_bytes()) for p in root.rglob("*.json"))}


def _wiki_record(wiki: Path | None, record_id: str) -> dict | None:
    if wiki is None or not (wiki / rec.RECORDS_DIR).is_dir():
        return None
    found = next((wiki / rec.RECORDS_DIR).rglob(f"{record_id}.json"), None)
    return json.loads(found.read_bytes()) if found is not None else None


def lever_diff(text: str) -> str:
    """A lever's diff: as written (a hunk header ``@@`` may open it), or ``@NAME``: that
    snippet of ``gitkb.testing.trace``."""
    if text.startswith("@") and text[1:].isidentifier():
        return str(getattr(example_trace, text[1:]))
    return text


def score(levers: list[dict], wiki: Path | None) -> Score:
    """The detector's answers on ``levers`` (``wiki``: the GPU-wiki sample's folder)."""
    examples = _example_records()
    scored, skipped = [], []
    for lever in levers:
        if "record" in lever:
            record_id = lever["record"]
            found = examples.get(record_id) or _wiki_record(wiki, record_id)
            if found is None:
                skipped.append(lever["id"])
                continue
            detection = techniques.record_technique(found)
        else:
            detection = techniques.vocabulary().detect(
                lever_diff(lever.get("diff", "")), lever["sentence"], lever["dsl"]
            )
        scored.append(
            Scored(lever["id"], lever["origin"], lever["label"], detection.key, detection.source)
        )
    return Score(tuple(scored), tuple(skipped))
