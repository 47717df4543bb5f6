"""Technique identity: the canonical name of the change one lever of a trace made.

The vocabulary (``targets/techniques.toml``, versioned) lists, per DSL, each technique's
canonical name, its meaning, its code signatures (what a diff adds, removes or changes;
for a parameter, which way it moved) and its word patterns (synonyms in a trace's own
sentences). ``detect`` reads the diff first: a technique the diff shows is a checked fact.
The words are the fallback, read only when the diff shows none. A lever that matches
nothing keeps its own phrase and is uncategorized. Two techniques in one change stay
together (``num-warps-up+rows-per-program-up``): two different changes never merge.

A key is a technique's name, then ``-<direction>`` where the change has one: ``up`` or
``down`` for a parameter, the new value for a named setting (``eviction-policy-evict-
first``), ``removed`` for a construct a change took out. This module reads records as
plain dicts and imports nothing of the store.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache, lru_cache

from gitkb.errors import GitkbError
from gitkb.record import dig
from gitkb.record.values import stripped_text
from gitkb.trace.naming import slugify
from gitkb.trace.technique_diff import as_diff, changed_lines, has_changes, outright
from gitkb.trace.technique_entry import (
    AnchorIndex,
    FamilyIndex,
    Found,
    Named,
    Technique,
    WordPattern,
    value_slug,
)
from gitkb.trace.technique_patterns import compiled
from gitkb.trace.technique_words import (
    DOWN,
    REMOVED,
    UP,
    changes_nothing,
    context_spans,
    lever_parts,
    returned_to,
    within_another,
)
from gitkb.trace.vocabulary_version import FILE_NAME, vocabulary_path

KINDS = ("construct", "parameter", "value")
JOIN = "+"
EVIDENCE_TYPES = ("strategy", "anti-strategy")
CARD_TYPE = "technique-card"
# The implementation formats whose snippet is a diff of the lever (the built-in
# distiller's and an importer's); any other snippet is source, not a change.
DIFF_FORMAT_PREFIX = "unified-diff"


@dataclass(slots=True, frozen=True)
class Detection:
    """What one lever is: its canonical key ("" when uncategorized), the techniques found,
    where they were read (``diff``, ``words``, ``tags``, ``card``, or ``none``), and the
    trace's own phrase (kept for an uncategorized lever)."""

    key: str
    found: tuple[Found, ...]
    source: str
    phrase: str
    version: str

    @property
    def categorized(self) -> bool:
        return bool(self.key)

    def components(self) -> list[str]:
        """Every name a ``--technique`` filter matches: each key part, and each part's
        technique name (``num-warps`` finds ``num-warps-up``)."""
        names = {f.key for f in self.found} | {f.name for f in self.found}
        return sorted(names | ({self.key} if self.key else set()))


@dataclass(slots=True, frozen=True, eq=False)
class Vocabulary:
    """The parsed vocabulary: its version, techniques, DSL aliases and each DSL family's
    techniques."""

    version: str
    techniques: tuple[Technique, ...]
    aliases: dict[str, str]
    families: dict[str, tuple[Technique, ...]]
    indexes: dict[str, FamilyIndex]

    def named(self, name: str) -> Technique | None:
        return next((t for t in self.techniques if t.name == name), None)

    def family(self, dsl: str | None) -> str:
        folded = (dsl or "").strip().lower()
        return self.aliases.get(folded, folded)

    def known_family(self, dsl: str | None) -> str:
        """A record's dsl's family when the vocabulary lists techniques of it, else ""."""
        family = self.family(dsl)
        return family if family in self.families else ""

    def for_dsl(self, dsl: str | None) -> tuple[Technique, ...]:
        """The techniques of a record's dsl (every one for ``any``, none or an unknown dsl)."""
        return self.families.get(self.family(dsl), self.techniques)

    def detect(self, diff: str, sentence: str, dsl: str | None) -> Detection:
        """The lever's technique: the diff's first, else the sentence's words. Where there
        is a diff, words never vouch for a code change it does not show: they may name only
        a technique that has no code signature (a fusion, rows kept in registers)."""
        return _detected(self, diff, sentence, dsl)

    def _detection(self, found: dict[str, str], source: str, phrase: str) -> Detection:
        for name in list(found):
            technique = self.named(name)
            for implied in technique.subsumes if technique else ():
                if implied != name:
                    found.pop(implied, None)
        parts = tuple(sorted((Found(n, d) for n, d in found.items()), key=lambda f: f.key))
        key = JOIN.join(f.key for f in parts)
        return Detection(key, parts, source if key else "none", phrase, self.version)

    def parse_key(self, key: str) -> tuple[Found, ...] | None:
        """The techniques a canonical key names, or None when it is no key of this
        vocabulary."""
        parts = []
        for part in stripped_text(key).split(JOIN) if stripped_text(key) else ():
            found = self._parse_part(part)
            if found is None:
                return None
            parts.append(found)
        if not parts or JOIN.join(sorted(f.key for f in parts)) != key:
            return None
        return tuple(parts)

    def _parse_part(self, part: str) -> Found | None:
        if self.named(part) is not None:
            return Found(part)
        for t in self.techniques:
            if not part.startswith(t.name + "-"):
                continue
            direction = part[len(t.name) + 1 :]
            allowed = {
                "construct": direction == REMOVED,
                "parameter": direction in (UP, DOWN, REMOVED),
                "value": bool(direction) and value_slug(direction) == direction,
            }[t.kind]
            if allowed:
                return Found(t.name, direction)
        return None

    def signed(self, found: tuple[Found, ...], dsl: str | None) -> bool:
        """Whether a diff of ``dsl``'s code can show any of ``found`` (``signed_in``)."""
        named = (self.named(f.name) for f in found)
        return any(t is not None and t.signed_in(self.known_family(dsl)) for t in named)

    def from_key(self, key: str, source: str) -> Detection | None:
        found = self.parse_key(key)
        if found is None:
            return None
        return Detection(key, found, source, key, self.version)


# An admission asks one record's lever twice (its technique-claim gate, then its index
# cache row): asked again, the answer is the one found (a Detection is immutable, and the
# vocabulary lives as long as the process).
@lru_cache(maxsize=256)
def _detected(vocab: Vocabulary, diff: str, sentence: str, dsl: str | None) -> Detection:
    index = vocab.indexes.get(vocab.family(dsl), vocab.indexes[""])
    added, removed = changed_lines(diff)
    found: dict[str, str] = {}
    if added or removed:
        plus, minus = (added, added.lower()), (removed, removed.lower())
        defaulted: set[str] = set()
        for t in index.code.candidates(plus[1], minus[1]):
            direction = t.shown_by(plus, minus)
            if direction is not None:
                found[t.name] = direction
                if t.kind == "parameter" and not t.set_to(minus):
                    defaulted.add(t.name)
        found = outright(found, defaulted)
    source = "diff"
    if not found and not changes_nothing(sentence):
        source = "words"
        family = vocab.known_family(dsl)
        diffed = family if has_changes(diff) else None
        # the lever before its cause or purpose; the whole sentence when that names none
        for text in dict.fromkeys(lever_parts(sentence)):
            found = _worded(index.words, text, family, diffed)
            if found:
                break
    return vocab._detection(found, source, slugify(sentence, "") if sentence else "")


def _worded(index: AnchorIndex, text: str, family: str, diffed: str | None) -> dict[str, str]:
    """The techniques (name -> direction) a text's words name as the change: those named
    outright, else those named weakly; never one named only as context (``context_spans``)
    or inside another's words (``within_another``). ``family``: the record's ("" when
    unknown); ``diffed``: None where there is no diff, else its code's family, whose signed
    techniques (``signed_in``) words never name."""
    lowered, context = text.lower(), context_spans(text)
    named: dict[str, Named] = {}
    kinds: dict[str, str] = {}
    for t in index.candidates(lowered):
        if diffed is None or not t.signed_in(diffed):
            said = t.named_by(text, lowered, family, context)
            if said is not None:
                named[t.name], kinds[t.name] = said, t.kind
    # back to an old form: where it names no technique ("back to raw pointer arithmetic"),
    # a construct named elsewhere was taken out and a named setting went back to a value
    # unsaid; where it names one ("back to cp.async; TMA cost more"), a construct named
    # elsewhere is what it went back from
    back = returned_to(text)
    if back is not None:
        there = {
            n for n, said in named.items() if any(back[0] <= a < back[1] for a, _ in said.spans)
        }
        if there:
            named = {n: s for n, s in named.items() if n in there or kinds[n] != "construct"}
        else:
            gone = {"construct": REMOVED, "value": ""}
            named = {
                n: s._replace(direction=gone.get(kinds[n], s.direction)) for n, s in named.items()
            }
    inside = within_another(
        {n: s.span for n, s in named.items()}, {n: s.spans for n, s in named.items()}
    )
    kept = [(n, s.direction, s.weak) for n, s in named.items() if n not in inside]
    return {n: d for n, d, weak in kept if not weak} or {n: d for n, d, _ in kept}


# --- the vocabulary file -------------------------------------------------------------------


@cache
def vocabulary() -> Vocabulary:
    """The shipped vocabulary, parsed once."""
    try:
        with open(vocabulary_path(), "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise GitkbError(f"the technique vocabulary cannot be read: {exc}") from exc
    return parse(raw, check=False)


def _word(entry: object, where: str, check: bool) -> WordPattern:
    if isinstance(entry, dict):
        direction = entry.get("direction", "")
        if not isinstance(direction, str) or value_slug(direction) != direction:
            raise GitkbError(f"{FILE_NAME}: {where}: direction {direction!r} is not a slug")
        weak = entry.get("weak", False)
        if not isinstance(weak, bool):
            raise GitkbError(f"{FILE_NAME}: {where}: weak is true or false")
        return WordPattern(compiled(entry.get("pattern"), where, re.I, check), direction, weak)
    return WordPattern(compiled(entry, where, re.I, check))


def _technique(entry: dict, n: int, check: bool) -> Technique:
    name = entry.get("name")
    where = f"technique {n} ({name!r})"
    if not isinstance(name, str) or slugify(name, "") != name or JOIN in name:
        raise GitkbError(f"{FILE_NAME}: {where}: a name is lowercase-hyphenated")
    kind = entry.get("kind", "construct")
    if kind not in KINDS:
        raise GitkbError(f"{FILE_NAME}: {where}: kind must be one of {', '.join(KINDS)}")
    dsls, code, words = entry.get("dsls"), entry.get("code", []), entry.get("words", [])
    if not isinstance(dsls, list) or not dsls or not all(isinstance(d, str) for d in dsls):
        raise GitkbError(f"{FILE_NAME}: {where}: dsls must list the families it belongs to")
    if not isinstance(code, list) or not isinstance(words, list) or not (code or words):
        raise GitkbError(f"{FILE_NAME}: {where}: it needs code signatures or word patterns")
    default = entry.get("default")
    if default is not None and (kind != "parameter" or not isinstance(default, int)):
        raise GitkbError(f"{FILE_NAME}: {where}: only a parameter has an integer default")
    signatures = tuple(compiled(c, f"{where} code", 0, check) for c in code)
    if check and kind != "construct" and any(p.pattern.groups < 1 for p in signatures):
        raise GitkbError(f"{FILE_NAME}: {where}: a {kind}'s code patterns capture its value")
    values = entry.get("values", {})
    code_dsls = entry.get("code_dsls", dsls)
    listed = isinstance(code_dsls, list) and bool(code_dsls) and set(code_dsls) <= set(dsls)
    if "code_dsls" in entry and not (code and listed):
        raise GitkbError(f"{FILE_NAME}: {where}: code_dsls lists some of its dsls, with code")
    return Technique(
        name=name,
        dsls=tuple(d.lower() for d in dsls),
        meaning=str(entry.get("meaning", "")),
        kind=kind,
        default=default,
        code=signatures,
        # its own name, in any spelling (num-warps, num_warps, "num warps"), is a synonym:
        # an uncategorized phrase never spells a technique's name
        words=(
            *(_word(w, f"{where} words", check) for w in words),
            # a code signature spelled in the sentence (`__launch_bounds__(256)`, a CUTLASS
            # schedule's or a copy atom's name) names it as the code would
            *(WordPattern(s, code=True) for s in signatures),
            _word(r"\b" + r"[-_ ]?".join(map(re.escape, name.split("-"))) + r"\b", where, check),
        ),
        subsumes=tuple(str(s) for s in entry.get("subsumes", [])),
        values=tuple((str(k).lower(), str(v)) for k, v in values.items()),
        code_dsls=tuple(d.lower() for d in code_dsls),
    )


def parse(raw: bytes, check: bool = True) -> Vocabulary:
    """A vocabulary file's bytes parsed and checked; a bad one is one clear error. Without
    ``check`` (the shipped file, which the tests parse with it), each pattern is compiled
    when first run, not here: a process runs few of them."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GitkbError(f"{FILE_NAME}: {exc}") from exc
    version_ = data.get("version")
    if not isinstance(version_, str) or not version_:
        raise GitkbError(f"{FILE_NAME}: needs a version string")
    entries = data.get("technique")
    if not isinstance(entries, list) or not entries:
        raise GitkbError(f"{FILE_NAME}: no [[technique]] entries")
    techniques = tuple(_technique(e, n, check) for n, e in enumerate(entries, 1))
    names = [t.name for t in techniques]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise GitkbError(f"{FILE_NAME}: techniques named twice: {', '.join(twice)}")
    unknown = sorted({s for t in techniques for s in t.subsumes} - set(names))
    if unknown:
        raise GitkbError(f"{FILE_NAME}: subsumes unknown techniques: {', '.join(unknown)}")
    aliases = {str(k).lower(): str(v).lower() for k, v in data.get("aliases", {}).items()}
    families = {f: tuple(t for t in techniques if f in t.dsls) for t in techniques for f in t.dsls}
    indexes = {
        f: FamilyIndex(AnchorIndex.of(ts, True), AnchorIndex.of(ts, False))
        for f, ts in [*families.items(), ("", techniques)]
    }
    return Vocabulary(version_, techniques, aliases, families, indexes)


# --- a record's technique ------------------------------------------------------------------


def _payload(record: dict) -> dict:
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else {}


def record_diff(record: dict) -> str:
    """The diff a record states of its own change (its implementation snippet, when that
    is a diff), or ""."""
    implementation = _payload(record).get("implementation")
    if not isinstance(implementation, dict):
        return ""
    fmt, snippet = implementation.get("format"), implementation.get("snippet")
    if isinstance(fmt, str) and fmt.startswith(DIFF_FORMAT_PREFIX) and isinstance(snippet, str):
        return snippet
    return ""


def record_sentence(record: dict) -> str:
    """The record's own sentence of its lever: the change, what was attempted, else the
    technique or title it states."""
    payload = _payload(record)
    for name in ("change", "attempted", "technique", "title"):
        text = stripped_text(payload.get(name))
        if text:
            return text
    return ""


def _dsl(record: dict) -> str:
    retrieval = record.get("retrieval") if isinstance(record.get("retrieval"), dict) else {}
    scope = retrieval.get("scope") if isinstance(retrieval.get("scope"), dict) else {}
    return stripped_text(scope.get("dsl"))


def own_tags(record: dict) -> list[str]:
    """The record's technique tags that are not its operators or family."""
    retrieval = record.get("retrieval") if isinstance(record.get("retrieval"), dict) else {}
    scope = retrieval.get("scope") if isinstance(retrieval.get("scope"), dict) else {}
    operators = {stripped_text(o) for o in scope.get("operators") or [] if isinstance(o, str)}
    operators.add(stripped_text(scope.get("operator_family")))
    tags = retrieval.get("technique_tags")
    listed = tags if isinstance(tags, list) else []
    return [
        stripped_text(t) for t in listed if stripped_text(t) and stripped_text(t) not in operators
    ]


def _id_words(record: dict) -> list[str]:
    """The words of a record's id past its vendor, product and dsl, its family and
    operators left out (a GPU-wiki page's name and section, a mined lever's slug)."""
    record_id = stripped_text(record.get("id"))
    scope = dig(record, "retrieval", "scope")
    scope = scope if isinstance(scope, dict) else {}
    named = {stripped_text(o) for o in scope.get("operators") or [] if isinstance(o, str)}
    named.add(stripped_text(scope.get("operator_family")))
    return [w for w in record_id.split(".")[3:] if w and w not in named]


def _source(record: dict) -> str:
    """A record's verbatim source snippet (not a diff), or ""."""
    implementation = _payload(record).get("implementation")
    if not isinstance(implementation, dict) or record_diff(record):
        return ""
    fmt, snippet = implementation.get("format"), implementation.get("snippet")
    ok = isinstance(fmt, str) and fmt.startswith("source") and isinstance(snippet, str)
    return snippet if ok else ""


def record_technique(record: dict, vocab: Vocabulary | None = None) -> Detection:
    """The canonical technique of a record, derived from the record alone, the first of:
    a computed card's stated key; its own diff, else its sentence (``detect``); its first
    technique tag when that is a key; the words of its tags and its id (an importer's, a
    GPU-wiki page's names); a verbatim source snippet's code. Where the record has a diff,
    no tag or word vouches for a technique with code signatures the diff does not show.
    Uncategorized: the first own tag (or the sentence) is its phrase."""
    vocab = vocab or vocabulary()
    dsl = _dsl(record)
    if record.get("type") == CARD_TYPE:
        stated = vocab.from_key(stripped_text(_payload(record).get("technique")), "card")
        if stated is not None:
            return stated
    diff = record_diff(record)
    detection = vocab.detect(diff, record_sentence(record), dsl)
    if detection.categorized:
        return detection
    tags = own_tags(record)
    phrase = tags[0] if tags else detection.phrase
    stated = vocab.from_key(tags[0], "tags") if tags else None
    if stated is not None and not (has_changes(diff) and vocab.signed(stated.found, dsl)):
        return stated
    words = " ; ".join(w.replace("-", " ") for w in [*tags, *_id_words(record)])
    for source, found in (
        # the diff, which shows none, keeps the words to what code cannot show
        ("tags", vocab.detect(diff, words, dsl) if words else None),
        ("code", vocab.detect(as_diff(_source(record)), "", dsl) if _source(record) else None),
    ):
        if found is not None and found.categorized:
            return Detection(found.key, found.found, source, phrase, vocab.version)
    return Detection("", (), "none", phrase, vocab.version)


def tag_record(record: dict) -> Detection:
    """Put the canonical technique a mined record's own diff or sentence shows first in
    its ``technique_tags``, beside the trace's own phrase (which stays); a record of
    another type, or a lever that matches nothing, is left as it is."""
    if record.get("type") not in EVIDENCE_TYPES:
        return Detection("", (), "none", "", vocabulary().version)
    detection = vocabulary().detect(record_diff(record), record_sentence(record), _dsl(record))
    retrieval = record.get("retrieval")
    if not detection.categorized or not isinstance(retrieval, dict):
        return detection
    tags = retrieval.get("technique_tags")
    listed = [t for t in tags if t != detection.key] if isinstance(tags, list) else []
    retrieval["technique_tags"] = [detection.key, *listed]
    return detection
