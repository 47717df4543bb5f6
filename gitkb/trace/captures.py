"""Profiler captures ``profiles/v<N>[_suffix]/`` and whether each may back a profiler claim
(docs/trace-format.md §3, rule 9)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitkb.record.values import mapping
from gitkb.trace.files import TraceFiles

_PROFILE_DIR = re.compile(r"^v(\d+)(?:[_-](.+))?$")
_KERNEL_LINE = re.compile(r"^Kernel:\s*(.*)$", re.MULTILINE)
_REPORT_ANCHORS = (
    r"\*\*Root cause\*\*:",
    r"## Key Finding",
    r"## (?:Diagnosis|Bottleneck Analysis)",
    r"\*\*Evidence\*\*:",
)


@dataclass
class Capture:
    """One ``profiles/v<N>[_suffix]/`` capture and whether it may back a profiler claim."""

    dir: str
    n: int
    variant: str
    kernel: str | None
    usable: bool
    reason: str
    conclusion: str = ""  # REPORT.md's finding, when there is one


def read_captures(files: TraceFiles, non_target: tuple[str, ...], kernels: dict) -> list[Capture]:
    """Rule 9: usable only when summary.txt names the kernel under test, the capture was
    filtered by that name, and the name is not a non-target kernel. ``kernels`` maps a
    version number to its kernel source."""
    repo, tip = files.repo, files.commit
    found: dict[str, dict[str, str]] = {}
    for path, _sha in repo.list_tree(tip, "profiles"):
        parts = path.split("/")
        if len(parts) < 3:
            continue
        found.setdefault(parts[1], {})["/".join(parts[2:])] = path
    for link, target in repo.list_symlinks(tip, "profiles"):
        files.refused.append(f"{link}: symlink to {target!r} in profiles/ is not followed")
    captures = []
    for name in sorted(found):
        match = _PROFILE_DIR.match(name)
        if not match:
            continue
        n, variant = int(match.group(1)), match.group(2) or ""
        entries = found[name]
        kernel, usable, reason = None, False, ""
        if "summary.txt" not in entries:
            reason = "no summary.txt (AMD or raw capture formats name no kernel)"
        else:
            kernel, usable, reason = _judge(files, entries, non_target, kernels.get(n, ""))
        conclusion = ""
        if "REPORT.md" in entries:
            report = (files.read(entries["REPORT.md"]) or b"").decode("utf-8", "replace")
            conclusion = report_conclusion(report)
        captures.append(Capture(f"profiles/{name}", n, variant, kernel, usable, reason, conclusion))
    return captures


def _judge(
    files: TraceFiles, entries: dict, non_target: tuple[str, ...], source: str
) -> tuple[str | None, bool, str]:
    summary = (files.read(entries["summary.txt"]) or b"").decode("utf-8", "replace")
    found = _KERNEL_LINE.search(summary)
    kernel = found.group(1).strip() if found else None
    base = base_kernel_name(kernel or "")
    metrics = {}
    if "analysis/metrics_key_run.json" in entries:
        metrics = mapping(files.json(entries["analysis/metrics_key_run.json"]))
    if not kernel or kernel == "?":
        return kernel, False, "the summary names no kernel"
    if base in non_target or kernel in non_target:
        return kernel, False, f"captured {base}, a non-target kernel"
    if base_kernel_name(str(metrics.get("__kernel_name__", ""))) != base:
        return kernel, False, "the capture was not filtered by the kernel's name"
    if source and base not in source:
        return kernel, False, f"{base} is not a kernel of this version's kernel.py"
    return kernel, True, "names the kernel under test"


def base_kernel_name(name: str) -> str:
    """``void ns::fill<float>(...)`` -> ``fill``: namespaces, templates and arguments removed."""
    name = re.sub(r"\(.*$", "", name.strip())
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split("::")[-1].split()
    return words[-1] if words else ""


def report_conclusion(report: str) -> str:
    for anchor in _REPORT_ANCHORS:
        match = re.search(anchor + r"(.*)", report, re.DOTALL)
        if match and len(match.group(1).strip()) >= 30:
            return match.group(1).strip()[:1200]
    return "\n".join(report.splitlines()[:20]).strip()[:1200]
