"""Scrubbing agent-facing text (TRACE_FORMAT §6.6): no paths, addresses, hashes, versions.

Applied to every string a distiller sees, so a record written from a packet carries
no local path, e-mail, commit id, trace path or version id into served layers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_PATH = re.compile(r"(?:file://)?/(?:root|home|Users)/[\w.\-/]*")
_EMAIL = re.compile(r"(?<![\w.@])[\w.+\-]{2,}@[\w\-]+(?:\.[\w\-]+)*\.[a-z]{2,}\b")
_HOST = re.compile(r"\b[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)+\.(?:local|internal|lan|corp)\b")
_MD = re.compile(r"\b[\w/\-.]*\w\.md\b")
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
_VECTOR_CONTEXT = re.compile(r"vec|\.f16|\.bf16|x2|float", re.IGNORECASE)


def denylist_from_env() -> tuple[str, ...]:
    """The private substrings named by GITKB_DENYLIST (or ATREX_WIKI_DENYLIST)."""
    name = os.environ.get("GITKB_DENYLIST") or os.environ.get("ATREX_WIKI_DENYLIST")
    if not name:
        return ()
    try:
        lines = Path(name).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    return tuple(sorted({s.strip() for s in lines if s.strip() and not s.startswith("#")}))


class Scrubber:
    """One packet's scrubber: 8-hex tokens become ``shape-N`` numbered per packet."""

    def __init__(self, denylist: tuple[str, ...] = (), label: str = "") -> None:
        self.denylist = sorted(denylist, key=len, reverse=True)
        self.label = label
        self.hex_names: dict[str, str] = {}

    def _hex(self, match: re.Match) -> str:
        token = match.group(0)
        if token.isdigit():
            return token
        if token not in self.hex_names:
            self.hex_names[token] = f"shape-{len(self.hex_names) + 1}"
        return self.hex_names[token]

    def text(self, value: str) -> str:
        if not value:
            return value
        for term in self.denylist:
            value = re.sub(re.escape(term), "a private identifier", value, flags=re.IGNORECASE)
        if self.label:
            value = value.replace(self.label, "this operator")
        value = _PATH.sub("a local path", value)
        value = _EMAIL.sub("an address", value)
        value = _HOST.sub("a host", value)
        value = _MD.sub("a document", value)
        value = _LONG_HEX.sub("a commit", value)
        value = _HEX.sub(self._hex, value)
        value = _GIT_COMMAND.sub("the history", value)
        value = _PROFILE.sub("the profile", value)
        value = _MEMORY.sub("the step record", value)
        value = _SNAPSHOT.sub("that snapshot", value)
        value = _SOURCE.sub("the kernel source", value)
        value = _METADATA.sub("the trace metadata", value)
        value = _TRACE_NAME.sub("this operator", value)
        value = _LEADING_VERSION.sub("", value)
        value = _RERUN.sub("a re-measurement", value)
        value = _VERSION_LIST.sub("(an earlier step)", value)
        value = _VERSION_RUN.sub("earlier steps", value)
        value = _VERSION.sub(self._version, value)
        return re.sub(r"[ \t]{2,}", " ", value).strip()

    def _version(self, match: re.Match) -> str:
        window = match.string[max(0, match.start() - 12) : match.end() + 12]
        if match.group(0)[1:] in ("2", "4", "8", "16", "32", "64", "100") and (
            _VECTOR_CONTEXT.search(window)
        ):
            return match.group(0)
        return "an earlier step"

    def code(self, source: str) -> str:
        """Code keeps its statements; only comments and docstrings are scrubbed."""
        out = []
        in_doc = False
        for line in source.split("\n"):
            stripped = line.strip()
            quotes = stripped.count('"""') + stripped.count("'''")
            if in_doc or stripped.startswith(('"""', "'''")):
                out.append(self._comment_safe(line))
                if quotes == 1:
                    in_doc = not in_doc
                continue
            if "#" in line:
                head, _, comment = line.partition("#")
                out.append(head + "#" + self._comment_safe(comment))
            else:
                out.append(line)
        return "\n".join(out)

    def _comment_safe(self, text: str) -> str:
        for term in self.denylist:
            text = re.sub(re.escape(term), "a private identifier", text, flags=re.IGNORECASE)
        text = _PATH.sub("a local path", text)
        text = _EMAIL.sub("an address", text)
        return _MD.sub("a document", text)

    def value(self, node):
        """Scrub every string inside a JSON-like value (keys kept)."""
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, list):
            return [self.value(v) for v in node]
        if isinstance(node, dict):
            return {k: self.value(v) for k, v in node.items()}
        return node
