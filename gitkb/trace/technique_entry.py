"""One entry of the technique vocabulary and how it is read: a technique's code signatures
over a diff's two sides (shown, and which way it went) and its word patterns over a
trace's sentence (named, weakly or outright, and which way), and the index of a family's
techniques by the literals their patterns start with. The vocabulary and the detector
that runs these are ``gitkb.trace.techniques``."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from gitkb.trace.technique_patterns import Signature
from gitkb.trace.technique_words import (
    REMOVED,
    UNCHANGED,
    Span,
    direction_of,
    in_context,
    may_take_out,
    moved,
    taken_out,
)


def value_slug(text: str) -> str:
    """A named setting's value as a key's direction: lowercase-hyphenated, nothing dropped
    (``v3`` stays ``v3``, ``evict_first`` is ``evict-first``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.strip().lower()).strip("-")


# A diff's side: its text, and the text in lower case (what anchors are looked for in).
Side = tuple[str, str]


@dataclass(slots=True, frozen=True)
class WordPattern:
    """One synonym of a technique in a trace's sentence; ``direction`` fixed when given."""

    signature: Signature
    direction: str = ""
    weak: bool = False  # names its technique only when no other technique is named
    code: bool = False  # a code signature: it reads only a family the code is written for


class Named(NamedTuple):
    """How a sentence names a technique: which way it went, whether only weakly, where the
    match that says so is, and where every match of it outside context is."""

    direction: str
    weak: bool
    span: Span
    spans: tuple[Span, ...]


@dataclass(slots=True, frozen=True)
class Found:
    """One technique a change shows, and which way it went ("" when it has no direction)."""

    name: str
    direction: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}-{self.direction}" if self.direction else self.name


@dataclass(slots=True, frozen=True)
class Technique:
    """One entry of the vocabulary."""

    name: str
    dsls: tuple[str, ...]
    meaning: str
    kind: str
    default: int | None
    code: tuple[Signature, ...]
    words: tuple[WordPattern, ...]
    subsumes: tuple[str, ...]
    values: tuple[tuple[str, str], ...]
    code_dsls: tuple[str, ...]  # the families whose code its signatures are written for

    def signed_in(self, family: str) -> bool:
        """Whether a diff of ``family``'s code can show this technique (it has code
        signatures written for that family; any family it does not list, when it has any)."""
        return bool(self.code) and (family not in self.dsls or family in self.code_dsls)

    def _value(self, raw: str) -> str:
        folded = raw.strip().lower()
        return dict(self.values).get(folded, value_slug(folded))

    def set_to(self, side: Side) -> list[str]:
        """The values a diff's side sets this parameter or named setting to."""
        return [m.group(1) for p in self.code for m in p.matches(*side) if m.group(1)]

    def shown_by(self, added: Side, removed: Side) -> str | None:
        """The direction of this technique in a diff's added and removed text, or None
        when the diff does not show it."""
        if not _may_match(self.code, added[1]) and not _may_match(self.code, removed[1]):
            return None
        if self.kind == "construct":
            plus = Counter(m.group(0) for p in self.code for m in p.matches(*added))
            minus = Counter(m.group(0) for p in self.code for m in p.matches(*removed))
            if plus == minus:
                return None
            if plus.total() < minus.total():
                return REMOVED
            return ""
        plus_values, minus_values = self.set_to(added), self.set_to(removed)
        if Counter(plus_values) == Counter(minus_values):
            return None
        if self.kind == "value":
            new = [v for v in plus_values if v not in minus_values]
            return self._value(new[-1]) if new else REMOVED
        return moved([int(v) for v in plus_values], [int(v) for v in minus_values], self.default)

    def named_by(
        self, sentence: str, lowered: str, family: str, context: tuple[Span, ...]
    ) -> Named | None:
        """The direction the sentence (of a record of ``family``, "" when none is known)
        gives this technique, whether it is named only weakly, and where, or None when the
        sentence names it not, or only as context (``context``; ``in_context``). Weakly:
        by a synonym marked weak, or, for a parameter or a named setting, by a mention that
        gives no value and no direction (``BLOCK_N`` in "skip the masks when N is a multiple
        of BLOCK_N"). A code signature spelled in the sentence names it only where its code
        is that family's (PTX's ``ld.global.v4`` is no Triton change), and only as code no
        prose word spells (``int4`` may be 4-bit weights; ``int4*`` is code)."""
        code = self.signed_in(family)
        said: list[tuple[WordPattern, re.Match[str]]] = []
        for word in self.words:
            if (word.code and not code) or not word.signature.may_match(lowered):
                continue
            matches = word.signature.matches(sentence, lowered)
            if word.code:
                matches = (m for m in matches if _CODE_SPELLING.search(m.group(0)))
            said.extend((word, m) for m in matches if not in_context(context, sentence, m))
        # a construct taken out where the sentence names it is taken out ("dropped the
        # 2-CTA cluster; DSMEM traffic ..."); a named setting, back to a value unsaid
        outs = self.kind != "parameter" and may_take_out(sentence)
        gone = [(w, m) for w, m in said if outs and taken_out(sentence, m)]
        spans = tuple(m.span() for _, m in said)
        weak: Named | None = None
        read: set[int] = set()  # a word's first match gives its direction
        for word, match in gone or said:
            if id(word) in read:
                continue
            read.add(id(word))
            if gone:
                direction = REMOVED if self.kind == "construct" else ""
            else:
                direction = word.direction or self._direction_of(sentence, match)
            if direction == UNCHANGED:  # a sweep that won where it started changed nothing
                continue
            bare = self.kind == "parameter" and not direction and not _captured(match)
            if not (word.weak or bare):
                return Named(direction, False, match.span(), spans)
            weak = weak or Named(direction, True, match.span(), spans)
        return weak

    def _direction_of(self, sentence: str, match: re.Match[str]) -> str:
        if self.kind == "value" and _captured(match):
            return self._value(_captured(match))
        return direction_of(self.kind, sentence, match, self.default)


# What a code signature's match holds when it is code, not a prose word: punctuation no
# word has, or an identifier in camel case.
_CODE_SPELLING = re.compile(r"[_.(<:#=*\[]|[a-z][A-Z]")


def _captured(match: re.Match[str]) -> str:
    """What a word pattern's first group captured (a number, a value), or ""."""
    return (match.group(1) or "") if match.re.groups else ""


def _may_match(signatures: tuple[Signature, ...] | list[Signature], lowered: str) -> bool:
    """Whether any of ``signatures`` may match a text (its anchor is in it, or it has none)."""
    return any(s.may_match(lowered) for s in signatures)


@dataclass(slots=True, frozen=True, eq=False)
class AnchorIndex:
    """Which techniques a text may show, found from the literals their patterns start
    with (one pass over every anchor, not one per pattern); ``always``: those with a
    pattern that has none."""

    anchors: tuple[str, ...]
    by_anchor: dict[str, tuple[int, ...]]
    always: tuple[int, ...]
    techniques: tuple[Technique, ...]

    @classmethod
    def of(cls, techniques: tuple[Technique, ...], code: bool) -> AnchorIndex:
        by_anchor: dict[str, set[int]] = {}
        always: list[int] = []
        for n, t in enumerate(techniques):
            signatures = t.code if code else tuple(w.signature for w in t.words)
            for signature in signatures:
                if signature.anchors is None:
                    always.append(n)
                for a in signature.anchors or ():
                    by_anchor.setdefault(a, set()).add(n)
        return cls(
            tuple(by_anchor),
            {a: tuple(sorted(ns)) for a, ns in by_anchor.items()},
            tuple(sorted(set(always))),
            techniques,
        )

    def candidates(self, *lowered: str) -> list[Technique]:
        """The techniques, in vocabulary order, that may match one of the texts."""
        hit = set(self.always)
        for text in lowered:
            if text:
                hit.update(n for a in self.anchors if a in text for n in self.by_anchor[a])
        return [self.techniques[n] for n in sorted(hit)]


@dataclass(slots=True, frozen=True, eq=False)
class FamilyIndex:
    """A DSL family's techniques, indexed by their code and by their words."""

    code: AnchorIndex
    words: AnchorIndex
