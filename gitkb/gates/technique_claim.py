"""Store gate `technique-claim`: a canonical technique tag claims only what the record shows.

A strategy or anti-strategy whose first technique tag (its operators aside) is a key of
the technique vocabulary (``gitkb.trace.techniques``) claims each technique of that key,
in its direction (a bare name, in any direction). Where the record states its own diff
(an implementation snippet in the unified-diff format), a claimed technique with code
signatures must be one the diff shows, in that direction: the trace's words never vouch
for a code change the diff does not show ("num_warps 4 -> 8" beside a diff of ``x * 2``
becoming ``x * 3``). The record's own sentence (its change, or what it attempted) may
carry a claim only where it has no diff, or for a technique no code shows (a fusion, rows
kept in registers) and only when the diff shows no technique at all: the detector's word
fallback, so what mining tags is what this gate admits. A tag that is no key (the
trace's own phrase) claims nothing and is not judged; nor is a record of another type,
nor one an importer wrote (its raw evidence names the foreign file or page: its tags are
that tool's words). It neighbours no-fabrication: a technique, like a number, is only
what the evidence states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gitkb.gates import Finding, Gate, GateContext, first_of_type, mutation
from gitkb.record import dig
from gitkb.record.values import stripped_text
from gitkb.trace import techniques

NAME = "technique-claim"
FIELD = "retrieval.technique_tags[0]"


def _shown(vocabulary: techniques.Vocabulary, record: dict) -> tuple[dict[str, str], str]:
    """What the record's own evidence shows (technique name -> direction), and where it was
    read: ``diff`` when its diff shows any technique, else ``words`` (with a diff, only the
    techniques no code signature shows)."""
    detection = vocabulary.detect(
        techniques.record_diff(record), techniques.record_sentence(record), _dsl(record)
    )
    # ``detect`` drops a technique another one subsumes: a claim of the implied one is
    # judged against everything the evidence named, before that choice.
    shown = {f.name: f.direction for f in detection.found}
    for found in detection.found:
        technique = vocabulary.named(found.name)
        for implied in technique.subsumes if technique else ():
            shown.setdefault(implied, "")
    return shown, detection.source


def _imported(record: dict) -> bool:
    """Whether an importer wrote the record (its raw evidence names the foreign file or
    page): its tags are the other tool's words, which may spell a technique's name by
    chance and claim nothing; the index cache maps them onto the vocabulary."""
    return any(
        stripped_text(dig(record, "evidence", "raw", key)) for key in ("detail_file", "page_path")
    )


def _dsl(record: dict) -> str:
    return stripped_text(dig(record, "retrieval", "scope", "dsl"))


def claim_findings(record_id: str, record: dict) -> Iterator[Finding]:
    """The findings of one record's canonical tag."""
    if record.get("type") not in techniques.EVIDENCE_TYPES or _imported(record):
        return
    tags = techniques.own_tags(record)
    vocabulary = techniques.vocabulary()
    claimed = vocabulary.parse_key(tags[0]) if tags else None
    if claimed is None:
        return
    shown, source = _shown(vocabulary, record)
    has_diff = techniques.has_changes(techniques.record_diff(record))
    for part in claimed:
        # a bare name claims the technique, whichever way the evidence shows it went
        if part.name in shown and part.direction in (shown[part.name], ""):
            continue
        if part.name in shown:
            seen = f"{part.name}-{shown[part.name]}" if shown[part.name] else part.name
            why = f"its {'diff' if source == 'diff' else 'sentence'} shows {seen}"
        elif has_diff and vocabulary.signed((part,), _dsl(record)):
            why = "a code signature its own diff does not show"
            if source == "diff":
                why += f" (it shows {_listed(shown)})"
        elif has_diff:
            why = "which neither its diff nor its own sentence shows"
        else:
            why = "which its own sentence does not show"
        yield Finding(record_id, NAME, f"claims technique {part.key}, {why}", FIELD)


def _listed(shown: dict[str, str]) -> str:
    return ", ".join(f"{n}-{d}" if d else n for n, d in sorted(shown.items())) or "none"


def check(ctx: GateContext) -> Iterator[Finding]:
    for record_file, data in ctx.parsed():
        yield from claim_findings(record_file.id, data)


# --- injection cases: the example strategy's diff shows an online softmax ------------------


def _strategy(ctx: GateContext) -> dict | None:
    return next(
        (d for _, d in ctx.parsed() if d.get("type") == "strategy" and techniques.record_diff(d)),
        None,
    )


_anti = first_of_type("anti-strategy")


def _claim(tag: str) -> Callable[[dict], None]:
    def edit(record: dict) -> None:
        record["retrieval"]["technique_tags"].insert(0, tag)

    return edit


def _worded_over_diff(record: dict) -> None:
    """The trace's words claim more warps; its own diff changes a constant, no warps."""
    record["payload"]["implementation"]["snippet"] = "-    y = x * 2\n+    y = x * 3\n"
    record["payload"]["change"] = "num_warps 4 -> 8"
    record["retrieval"]["technique_tags"].insert(0, "num-warps-up")


GATE = Gate(
    NAME,
    "store",
    "a canonical technique tag claims only what the record's own diff shows",
    check,
    alone=True,
)

# a technique the diff does not touch
GATE.add("unseen-signature", mutation(_strategy, _claim("num-warps-up")))
# a technique the diff shows, in the opposite direction
GATE.add("wrong-direction", mutation(_strategy, _claim("online-softmax-removed")))
# a second technique riding along with the one the diff shows
GATE.add(
    "extra-technique", mutation(_strategy, _claim("eviction-policy-evict-first+online-softmax"))
)
# no diff: the sentence names no TMA
GATE.add("unnamed-words", mutation(_anti, _claim("tma-descriptors")))
# a diff that shows no technique: the words alone vouch for a code change it does not show
GATE.add("words-over-diff", mutation(_strategy, _worded_over_diff))
