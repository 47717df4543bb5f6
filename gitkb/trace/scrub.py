"""The project's one scrubber: private text out of what records and reports are built from.

docs/trace-format.md §6.6 and rule 11. Everything a record or a committed report is made
of (subjects, memory descriptions, journal text, kernel comments) passes through here
before it is used, and ids, slugs, tags and titles are made from the result. Four
strengths, each containing the one before:

* ``private(text)``: what must never leave the machine it was written on: denylisted
  terms, user names taken from home-directory paths, absolute paths, e-mail addresses
  and internal host names. Committed reports get this.
* ``served(text)``: what a served record may not say either: markdown page names and
  repository paths (the anonymization and no-cross-reference gates' rules). Importers
  use this through ``scrub(text)``.
* ``text(text)``: a trace's agent-facing prose: also commit ids, git commands, trace
  file names, ``kernel_opt_...`` trace names and version ids (8-hex shape ids become ``shape-N``,
  numbered per packet).
* ``name(text)``: the text ids, slugs and tags are made from: ``text`` with the private
  parts removed outright instead of replaced by words.

``code(source)`` scrubs only the comments and docstrings of code (its statements are
quoted verbatim). User names are learned (``learn``) from every text of a trace before
anything is scrubbed, so a name is removed wherever it appears, not only in its path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from gitkb.errors import GitkbError

# A JSON-like value: scrubbing keeps its shape (strings stay strings, lists lists).
Json = TypeVar("Json")

DENYLIST_VARIABLES = ("GITKB_DENYLIST", "ATREX_WIKI_DENYLIST")
PRIVATE_TERM = "a private identifier"
LOCAL_PATH = "a local path"
ADDRESS = "an address"
HOST = "a host"
USER = "a user"
DOCUMENT = "a document"
# The words private text is replaced by (a gate may need to recognise them).
PLACEHOLDERS = (PRIVATE_TERM, LOCAL_PATH, ADDRESS, HOST, USER, DOCUMENT)
# The words ``text`` puts where a trace names its own files, commits and versions.
TRACE_WORDS = (
    "this operator", "a commit", "shape-", "the history", "the profile", "the step record",
    "that snapshot", "the kernel source", "the trace metadata", "a re-measurement",
    "(an earlier step)", "earlier steps", "an earlier step",
)  # fmt: skip

_PATHS = re.compile(
    # a home directory, with or without what follows it
    r"(?:file://)?/(?:root|home|Users)(?:/[\w.\-+@~]*)*"
    # any other absolute path of two components or more (not the tail of a URL or a ratio)
    r"|(?:file://)?(?<![\w.)\]}>:/])/(?:[\w.\-+@~]+/)+[\w.\-+@~]*"
    # a well-known root alone
    r"|(?<![\w.:/])/(?:tmp|etc|opt|var|usr|srv|mnt|data|scratch|workspace|nfs|proj|work)\b"
    r"|~/[\w.\-+@~/]+"
    r"|\b[A-Za-z]:\\[^\s\"'<>|]+"
)
_USER_IN_PATH = re.compile(r"/(?:home|Users)/([^/\s\"'<>:]+)|\b[A-Za-z]:\\Users\\([^\\\s\"'<>]+)")
# Service accounts name no person; scrubbing them as words would blank ordinary prose.
_NOT_PERSONAL = {
    "admin", "agent", "build", "ci", "dev", "developer", "docker", "github", "gitlab",
    "jenkins", "nobody", "public", "runner", "shared", "ubuntu", "user", "work", "workspace",
}  # fmt: skip
_EMAIL = re.compile(r"(?<![\w.@])[\w.+\-]{2,}@[\w\-]+(?:\.[\w\-]+)*\.[a-z]{2,}\b")
_HOST = re.compile(r"\b[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)+\.(?:local|internal|lan|corp)\b")
_MD = re.compile(r"\b[\w/\-.]*\w\.md\b")
_REPOSITORY_PATH = re.compile(r"(?:docs|records)/[\w./-]+")
_HEX = re.compile(r"\b[0-9a-f]{8}\b")
_LONG_HEX = re.compile(r"\b[0-9a-f]{40}\b")
_GIT_COMMAND = re.compile(r"\bgit\s+(?:log|show|diff|blame)\b[^\n;]*")
_PROFILE = re.compile(r"\bprofiles/[\w.\-/]*")
_MEMORY = re.compile(r"\bmemory/[\w.\-]*\.json\b")
_SNAPSHOT = re.compile(r"\b(?:versions/)?kernel_v\d+\.py\b")
_SOURCE = re.compile(r"\b(?:kernel|reference|test_kernel|bench)\.py\b")
_METADATA = re.compile(r"\b(?:definition|solution|workload)\.jsonl?\b")
_TRACE_NAME = re.compile(r"\bkernel_opt_\w+")
_LEADING_VERSION = re.compile(r"^\s*v\d+\s*:\s*", re.IGNORECASE)
_RERUN = re.compile(r"\bv\d+_(?:rerun|baseline|base)\b", re.IGNORECASE)
_VERSION_LIST = re.compile(r"\(\s*v\d+(?:\s*(?:,|and|/|-)\s*v\d+)+\s*\)", re.IGNORECASE)
_VERSION_RUN = re.compile(r"\bv\d+(?:\s*(?:,|and|/|-|to)\s*v\d+)+\b", re.IGNORECASE)
# Lowercase only: V100, A100-style product names are hardware, not version ids (edge 17).
_VERSION = re.compile(r"\bv\d+\b")
_VERSION_MARK = re.compile(r"[vV]\d")  # in every match of the five version patterns above
_VECTOR_CONTEXT = re.compile(r"vec|\.f16|\.bf16|x2|float", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]{2,}")

_denylist_cache: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {}


# --------------------------------------------------------------------------- the denylist


def denylist_file() -> tuple[str, str] | None:
    """(variable, path) of the configured denylist file, or None when none is configured."""
    for variable in DENYLIST_VARIABLES:
        path = os.environ.get(variable)
        if path:
            return variable, path
    return None


def parse_denylist(text: str) -> tuple[str, ...]:
    """The case-folded substrings of a denylist: one a line, blank and '#' lines ignored."""
    terms = (line.strip() for line in text.splitlines())
    return tuple(dict.fromkeys(t.casefold() for t in terms if t and not t.startswith("#")))


def read_denylist(path: str) -> tuple[str, ...]:
    """The denylist at ``path``, re-read only when its mtime or size changed.

    Raises OSError or UnicodeDecodeError when the file cannot be read.
    """
    status = os.stat(path)
    stamp = (status.st_mtime_ns, status.st_size)
    cached = _denylist_cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    terms = parse_denylist(Path(path).read_text(encoding="utf-8"))
    _denylist_cache[path] = (stamp, terms)
    return terms


def denylist_from_env() -> tuple[str, ...]:
    """The private substrings of the file GITKB_DENYLIST (or ATREX_WIKI_DENYLIST) names.
    A named file that cannot be read is an error: scrubbing must not fail open."""
    configured = denylist_file()
    if configured is None:
        return ()
    variable, path = configured
    try:
        return read_denylist(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise GitkbError(f"the denylist file {variable} names cannot be read: {exc}") from None


def user_names(text: str) -> set[str]:
    """The user names home-directory paths in ``text`` reveal (service accounts left out)."""
    if "/home/" not in text and "/Users/" not in text and ":\\" not in text:
        return set()
    found = set()
    for match in _USER_IN_PATH.finditer(text):
        name = match.group(1) or match.group(2)
        if len(name) >= 3 and name.lower() not in _NOT_PERSONAL:
            found.add(name)
    return found


# --------------------------------------------------------------------------- the scrubber


class Scrubber:
    """One trace's (or one importer's) scrubber. ``denylist`` None: the environment's."""

    def __init__(
        self, denylist: tuple[str, ...] | None = None, users: tuple[str, ...] = ()
    ) -> None:
        terms = denylist_from_env() if denylist is None else denylist
        self.denylist = tuple(sorted({t for t in terms if t}, key=len, reverse=True))
        self._terms = _alternation(self.denylist)
        self.users: set[str] = set(users)
        self._users = _alternation(tuple(sorted(self.users, key=len, reverse=True)), words=True)
        self.hex_names: dict[str, str] = {}
        self._numbered = 0  # shape ids numbered so far: a text that numbers one is not kept
        # ``text`` of each text that numbered no shape id: the same for every packet, and a
        # trace's packets repeat most of their texts (description, shapes, subjects).
        self._texts: dict[str, str] = {}

    def learn(self, text: str) -> None:
        """Remember the user names a text's paths reveal, to scrub them everywhere."""
        new = user_names(text) - self.users
        if new:
            self.users |= new
            names = tuple(sorted(self.users, key=len, reverse=True))
            self._users = _alternation(names, words=True)
            self._texts = {}

    def for_packet(self) -> Scrubber:
        """The same terms with a fresh ``shape-N`` numbering (one per packet): the compiled
        patterns and the kept texts are shared, the learned names copied."""
        packet = Scrubber.__new__(Scrubber)
        packet.__dict__.update(self.__dict__, users=set(self.users), hex_names={}, _numbered=0)
        return packet

    def mentions_private(self, text: str) -> bool:
        """Whether ``text`` holds a denylisted term or a learned user name."""
        return bool(
            (self._terms and self._terms.search(text)) or (self._users and self._users.search(text))
        )

    # ----------------------------------------------------------------- strengths

    def private(self, value: str, blank: bool = False) -> str:
        if not value:
            return value
        # Whole paths and addresses first, so a private word inside one takes it all.
        if "/" in value or "\\" in value or "~" in value:
            value = _PATHS.sub(" " if blank else LOCAL_PATH, value)
        if "@" in value:
            value = _EMAIL.sub(" " if blank else ADDRESS, value)
        if "." in value:
            value = _HOST.sub(" " if blank else HOST, value)
        if self._terms is not None:
            value = self._terms.sub(" " if blank else PRIVATE_TERM, value)
        if self._users is not None:
            value = self._users.sub(" " if blank else USER, value)
        return value

    def served(self, value: str) -> str:
        if not value:
            return value
        value = self.private(value)
        if ".md" in value:
            value = _MD.sub(DOCUMENT, value)
        if "/" in value:
            value = _REPOSITORY_PATH.sub(DOCUMENT, value)
        return _SPACES.sub(" ", value).strip()

    def text(self, value: str) -> str:
        if not value:
            return value
        kept = self._texts.get(value)
        if kept is not None:
            return kept
        numbered = self._numbered
        scrubbed = self._scrubbed_text(value)
        if self._numbered == numbered:
            self._texts[value] = scrubbed
        return scrubbed

    def _scrubbed_text(self, value: str) -> str:
        value = self.served(value)
        value = _LONG_HEX.sub("a commit", value)
        value = _HEX.sub(self._hex, value)
        if "git" in value:
            value = _GIT_COMMAND.sub("the history", value)
        if "/" in value:
            value = _PROFILE.sub("the profile", value)
            value = _MEMORY.sub("the step record", value)
        if ".py" in value:
            value = _SNAPSHOT.sub("that snapshot", value)
            value = _SOURCE.sub("the kernel source", value)
        if ".json" in value:
            value = _METADATA.sub("the trace metadata", value)
        if "kernel_opt_" in value:
            value = _TRACE_NAME.sub("this operator", value)
        if _VERSION_MARK.search(value):  # what each version pattern needs, looked for once
            value = _LEADING_VERSION.sub("", value)
            value = _RERUN.sub("a re-measurement", value)
            value = _VERSION_LIST.sub("(an earlier step)", value)
            value = _VERSION_RUN.sub("earlier steps", value)
            value = _VERSION.sub(self._version, value)
        return _SPACES.sub(" ", value).strip()

    def name(self, value: str) -> str:
        """Text to make an id, slug or tag from: private parts removed, not described."""
        value = self.private(value, blank=True)
        return _SPACES.sub(" ", value).strip()

    def code(self, source: str) -> str:
        """Code keeps its statements; only comments and docstrings are scrubbed."""
        out = []
        in_doc = False
        for line in source.split("\n"):
            if in_doc or line.lstrip().startswith(('"""', "'''")):
                out.append(self._comment(line))
                if line.count('"""') + line.count("'''") == 1:
                    in_doc = not in_doc
                continue
            if "#" in line:
                head, _, comment = line.partition("#")
                out.append(head + "#" + self._comment(comment))
            else:
                out.append(line)
        return "\n".join(out)

    def value(self, node: Json) -> Json:
        """``text`` on every string inside a JSON-like value (keys kept)."""
        return _walk(node, self.text)

    def private_value(self, node: Json) -> Json:
        """``private`` on every string inside a JSON-like value (keys kept)."""
        return _walk(node, self.private)

    # ----------------------------------------------------------------- helpers

    def _comment(self, text: str) -> str:
        text = self.private(text)
        return _MD.sub(DOCUMENT, text) if ".md" in text else text

    def _hex(self, match: re.Match) -> str:
        token = match.group(0)
        if token.isdigit():
            return token
        self._numbered += 1
        if token not in self.hex_names:
            self.hex_names[token] = f"shape-{len(self.hex_names) + 1}"
        return self.hex_names[token]

    def _version(self, match: re.Match) -> str:
        window = match.string[max(0, match.start() - 12) : match.end() + 12]
        if match.group(0)[1:] in ("2", "4", "8", "16", "32", "64", "100") and (
            _VECTOR_CONTEXT.search(window)
        ):
            return match.group(0)
        return "an earlier step"


def scrub(text: object, denylist: tuple[str, ...] | None = None) -> str:
    """One-shot ``served`` scrub of any text (for importers): private parts, markdown page
    names and repository paths replaced by words. ``denylist`` None: the environment's."""
    return Scrubber(denylist).served(text if isinstance(text, str) else "")


def _alternation(terms: tuple[str, ...], words: bool = False) -> re.Pattern | None:
    if not terms:
        return None
    body = "|".join(re.escape(t) for t in terms)
    return re.compile(rf"\b(?:{body})\b" if words else body, re.IGNORECASE)


def _walk(node: Json, change: Callable[[str], str]) -> Json:
    """``node`` with ``change`` applied to every string in it: the same shape back."""
    if isinstance(node, str):
        return cast(Json, change(node))
    if isinstance(node, list):
        return cast(Json, [_walk(v, change) for v in node])
    if isinstance(node, dict):
        return cast(Json, {k: _walk(v, change) for k, v in node.items()})
    return node
