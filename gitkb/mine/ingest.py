"""Ingest: a trace's commits and committed files -> one row per version (TRACE_FORMAT rules 1-10).

Everything is read from the commits reachable from ``tip`` through the VCS
layer, so a bare clone, a checkout and the store's ``refs/kb/traces/<label>``
copy all ingest the same. Bad input never raises here: a version whose files
cannot be read degrades (no numbers) and the reason is kept on the row.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from dataclasses import dataclass, field

from gitkb import targets
from gitkb.errors import GitkbError
from gitkb.mine.packet import MineOptions
from gitkb.vcs.repository import Repository

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_EVIDENCE_BYTES = 32 * 1024 * 1024
DEFAULT_NON_TARGET_KERNELS = ("distribution_elementwise_grid_stride_kernel",)
DEFAULT_HARNESS = "the trace's own benchmark harness"

_VERSION_PREFIX = re.compile(r"^\s*v(\d+)\s*:", re.IGNORECASE)
_EPISODE = re.compile(r"^\s*episode\s+(\d+)\s*:", re.IGNORECASE)
_MEMORY_VERSION = re.compile(r"^memory/v(\d+)\.json$")
_MEMORY_VARIANT = re.compile(r"^memory/v(\d+)([_-][^/]+)\.json$")
_LONG_HORIZON = re.compile(r"^memory/long_horizon_e(\d+)\.json$")
_PROFILE_DIR = re.compile(r"^v(\d+)(?:[_-](.+))?$")
_REVERTED_WORD = re.compile(r"\breverted\b|dead-end recorded", re.IGNORECASE)
_VERDICT_LINE = re.compile(r"^\s*verdict\s*:(.*)$", re.IGNORECASE | re.MULTILINE)
_DEADEND = re.compile(r"dead-end recorded:(.*)", re.IGNORECASE | re.DOTALL)
_NEXT = re.compile(r"\bNext:(.*)", re.DOTALL)
_SENTENCE_END = re.compile(r"\.\s+(?=[A-Za-z])")
_STREAK = re.compile(r"(\d+)(?:st|nd|rd|th) consecutive dead-end", re.IGNORECASE)


class TraceError(GitkbError):
    """The trace cannot be mined at all (not a repository, empty, no kernel.py, no hardware)."""


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


@dataclass
class VersionRow:
    version: str
    n: int
    sha: str | None = None  # the segment's commit: the code commit, else the memory event
    code_sha: str | None = None  # the commit that supplies kernel.py and the diff
    parent: str | None = None  # code_sha's first parent
    event_sha: str | None = None  # first commit adding memory/v<N>.json (rule 1)
    subject: str = ""
    body: str = ""
    has_commit: bool = False
    has_memory: bool = False
    memory_path: str | None = None
    reverted: bool = False
    deadend_items: list[str] = field(default_factory=list)
    deadend_blob: str = ""
    deadend_streak: int | None = None
    next_direction: str = ""
    dsl: str = "any"
    # numbers (None when the memory is missing or degraded)
    geomean: float | None = None
    arith_mean: float | None = None
    by_shape: list[tuple[str, float]] = field(default_factory=list)
    speedup_vs_ref: float | None = None
    correctness: str | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    gate: str | None = None
    gate_failure: str = ""
    measurement_status: str | None = None
    measurement_subject: str | None = None
    measurement_source: str | None = None
    carried_from: str | None = None
    improvement_pct: float | None = None
    category: str = ""
    description: str = ""
    expected_impact: str = ""
    open_directions: list[dict] = field(default_factory=list)
    pitfalls: list[dict] = field(default_factory=list)
    experiments: list[dict] = field(default_factory=list)
    long_horizon_status: str | None = None
    episode: int | None = None
    journal_path: str | None = None  # memory/long_horizon_e<EEEE>.json of a promotion
    git_commit_hash: str | None = None
    masked: bool = False
    problems: list[str] = field(default_factory=list)  # per-version degradations (rule 7)

    @property
    def carry_forward(self) -> bool:
        """Numbers that describe the incumbent, not this version's code (rule 2)."""
        return (
            (self.measurement_subject not in (None, "candidate"))
            or self.measurement_source == "canonical_incumbent_carry_forward"
            or bool(self.carried_from)
            or self.gate == "FAIL"
        )

    @property
    def text(self) -> str:
        """The version's own words: subject, body, description and gate failure."""
        parts = [self.subject, self.body, self.description, self.gate_failure]
        return "\n".join(p for p in parts if p)


@dataclass
class TraceMeta:
    label: str
    head: str
    operator_name: str
    operator_slug: str
    workload_family: str
    description: str
    constants: dict
    var_axes: list[str]
    n_shapes: int
    vendor: str
    arch: str
    product: str | None
    hardware_basis: str  # which token (or flag) decided
    harness: str


@dataclass
class Ingest:
    meta: TraceMeta
    rows: list[VersionRow]
    captures: list[Capture]
    variants: list[dict]
    non_version_files: list[dict]
    non_version_commits: list[str]
    refused: list[str]  # paths refused by the path-safety rules, with the reason

    def row(self, n: int) -> VersionRow | None:
        return next((r for r in self.rows if r.n == n), None)


# --------------------------------------------------------------------------- safe reads


class _Reader:
    """Reads trace files at one commit under rule 6: relative paths only, no escaping
    symlinks, 8 MiB per file; everything refused is remembered for the report."""

    def __init__(self, repo: Repository, commit: str) -> None:
        self.repo = repo
        self.commit = commit
        self.refused: list[str] = []

    def read(self, path: str, budget: list[int] | None = None) -> bytes | None:
        if path.startswith("/") or ".." in path.split("/") or not path:
            self.refused.append(f"{path}: not a path relative to the trace root")
            return None
        for _ in range(8):  # a chain of in-trace links, bounded
            if not self.repo.is_symlink(self.commit, path):
                break
            target = (self.repo.read(self.commit, path) or b"").decode("utf-8", "replace")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if target.startswith("/") or resolved.startswith("..") or resolved == ".":
                self.refused.append(f"{path}: symlink to {target!r} leaves the trace, refused")
                return None
            path = resolved
        data = self.repo.read(self.commit, path)
        if data is None:
            return None
        if len(data) > MAX_FILE_BYTES:
            self.refused.append(f"{path}: {len(data)} bytes is over the 8 MiB limit, refused")
            return None
        if budget is not None:
            budget[0] += len(data)
            if budget[0] > MAX_EVIDENCE_BYTES:
                self.refused.append(f"{path}: evidence over 32 MiB in total, refused")
                return None
        return data

    def json(self, path: str) -> object:
        data = self.read(path)
        if data is None:
            return None
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.refused.append(f"{path}: not UTF-8 JSON, ignored")
            return None


# --------------------------------------------------------------------------- helpers


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def sniff_dsl(source: str) -> str:
    """The DSL of a kernel source, from its code with comments removed (edge 18)."""
    code = "\n".join(line.split("#", 1)[0] for line in source.splitlines())
    low = code.lower()
    if "flydsl" in low:
        return "flydsl"
    if "gluon" in low:
        return "gluon"
    if any(k in low for k in ("cutlass.cute", "import cutlass", "cute.jit", "cutedsl")):
        return "cutedsl"
    if any(k in low for k in ("load_inline", "__global__", "cpp_extension", "hipcc")):
        return "cuda"
    if "triton" in low:
        return "triton"
    return "any"


def normalize_pitfall(entry: object) -> dict | None:
    """Both dialects (rule 4) -> {pitfall, explanation, fix}; strings kept, nulls dropped."""
    if isinstance(entry, str):
        return {"pitfall": entry.strip(), "explanation": "", "fix": ""} if entry.strip() else None
    if not isinstance(entry, dict):
        return None
    if any(k in entry for k in ("pitfall", "explanation", "fix")):
        out = {k: _text(entry.get(k)) for k in ("pitfall", "explanation", "fix")}
    else:
        out = {
            "pitfall": _text(entry.get("error_message")),
            "explanation": _text(entry.get("root_cause")),
            "fix": _text(entry.get("fix_applied")) or _text(entry.get("lesson")),
        }
    return out if any(out.values()) else None


def _cut_sentence(text: str) -> str:
    match = _SENTENCE_END.search(text)
    return (text[: match.start()] if match else text).strip().rstrip(".").strip()


def _split_top_level(text: str) -> list[str]:
    items, depth, current = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return items


def parse_deadends(message: str) -> tuple[list[str], str, str]:
    """(items, blob, next direction) from ``dead-end recorded: a, b. Next: c`` (edges 10-11)."""
    next_match = _NEXT.search(message)
    next_direction = next_match.group(1).strip() if next_match else ""
    match = _DEADEND.search(message)
    if not match:
        return [], "", next_direction
    blob = match.group(1)
    blob = _NEXT.split(blob, maxsplit=1)[0]
    blob = _cut_sentence(blob)
    items = [_cut_sentence(item) for item in _split_top_level(blob)]
    return [i for i in items if len(i) > 3], blob, next_direction


def is_reverted(subject: str, body: str) -> bool:
    """Rule 10: ``reverted`` counts in the subject or a ``Verdict:`` line, not in prose."""
    if _REVERTED_WORD.search(subject):
        return True
    return any(_REVERTED_WORD.search(v) for v in _VERDICT_LINE.findall(body))


# --------------------------------------------------------------------------- names

_ABBREVIATIONS = {
    "attention": "attn",
    "backward": "bwd",
    "forward": "fwd",
    "normalization": "norm",
    "multiplication": "mul",
    "matrix": "mat",
}
_STOP_WORDS = {"the", "a", "an", "of", "and", "with", "for", "to", "in", "on", "kernel", "opt"}
_PLATFORM_WORDS = {
    "triton",
    "gluon",
    "cutedsl",
    "cuda",
    "flydsl",
    "tilelang",
    "torch",
    "pytorch",
    "production",
    "nvidia",
    "amd",
}
_FAMILIES = (
    ("ssm-linear-attention", ("ssm", "mamba", "gdn", "linear-attn", "linear_attn", "retention")),
    ("attention", ("attn", "attention", "mha", "gqa", "mla", "flash", "sdpa", "decode")),
    ("norm", ("norm",)),
    ("moe", ("moe", "expert")),
    ("rope", ("rope", "rotary")),
    ("gemm-projection", ("gemm", "matmul", "linear", "gemv", "proj", "mm")),
    ("mlp-activation", ("gelu", "silu", "swiglu", "mlp", "relu", "activation")),
    ("conv-vision", ("conv", "vision", "patch")),
    ("mask-index", ("mask", "index", "gather", "scatter", "topk", "embedding")),
    ("decoder-layer", ("decoder", "layer")),
)


def operator_name(label: str, definition_name: str | None) -> str:
    name = definition_name or label
    name = re.sub(r"^.*?kernel_opt_\d+_", "", name)
    name = re.sub(r"^kernel_opt_", "", name)
    return name.strip(" _-./") or "unknown"


def operator_slug(name: str) -> str:
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    words = [_ABBREVIATIONS.get(w, w) for w in words if not w.isdigit()]
    words = [w for w in words if w not in _STOP_WORDS]
    # Native workspace names end in <framework>_<platform>[_production] (edge 13).
    while len(words) > 1 and (words[-1] in _PLATFORM_WORDS or targets.lookup(words[-1])):
        words.pop()
    return "-".join(words[:5]) or "unknown"


def workload_family(slug: str, description: str = "") -> str:
    words = set(re.split(r"[^a-z0-9_]+", f"{slug.replace('-', ' ')} {description}".lower()))
    joined = slug.lower()
    for family, keys in _FAMILIES:
        if any(k in words or (len(k) > 3 and k in joined) for k in keys):
            return family
    return "misc"


# --------------------------------------------------------------------------- hardware


def resolve_hardware(reader: _Reader, options) -> tuple[str, str, str | None, str]:
    """Rule 8: flags first; else tokens from solution, definition, framework_baseline."""
    if options.vendor or options.arch or options.product:
        return _from_flags(options)
    tokens: list[tuple[str, str]] = []
    solution = _dict(reader.json("solution.json"))
    for token in _as_list(_dict(solution.get("spec")).get("target_hardware")):
        tokens.append(("solution.json spec.target_hardware", token))
    definition = _dict(reader.json("definition.json"))
    for key in ("target_hardware", "gpu", "hardware"):
        for token in _as_list(definition.get(key)):
            tokens.append((f"definition.json {key}", token))
    baseline = _dict(reader.json("framework_baseline.json"))
    for token in _as_list(baseline.get("arch")):
        tokens.append(("framework_baseline.json arch", token))
    for where, token in tokens:
        hw = targets.lookup(token)
        if hw is not None:
            return hw.vendor, hw.arch, hw.product, f"{where} {token!r} (table token {hw.token})"
    tried = ", ".join(repr(t) for _, t in tokens) or "none found"
    raise TraceError(
        f"no hardware token in the trace maps to a known target (tokens: {tried}); "
        "pass --vendor/--arch/--product"
    )


def _as_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _from_flags(options) -> tuple[str, str, str | None, str]:
    product_hw = targets.lookup(options.product) if options.product else None
    arch = options.arch or (product_hw.arch if product_hw else None)
    vendor = options.vendor or (product_hw.vendor if product_hw else None)
    if arch and not vendor:
        vendors = {hw.vendor for hw in targets.table().values() if hw.arch == arch}
        vendor = vendors.pop() if len(vendors) == 1 else None
    if not arch or not vendor:
        raise TraceError(
            "the hardware flags do not name a known target; pass --vendor and --arch "
            f"(known arches: {', '.join(sorted(targets.arches()))}) or a known --product"
        )
    if arch not in targets.arches():
        raise TraceError(f"unknown --arch {arch!r}; known: {', '.join(sorted(targets.arches()))}")
    product = options.product.lower() if options.product else None
    return vendor, arch, product, "command-line flags"


# --------------------------------------------------------------------------- memory


def _apply_memory(row: VersionRow, raw: bytes | None, refused: str | None) -> None:
    if raw is None:
        row.problems.append(refused or "memory file unreadable")
        return
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        row.problems.append(f"memory is not UTF-8 (byte {exc.start}); no numbers")
        return
    except json.JSONDecodeError as exc:
        row.problems.append(f"memory is not JSON ({exc.msg}, line {exc.lineno}); no numbers")
        return
    if not isinstance(doc, dict):
        row.problems.append(f"memory is a JSON {type(doc).__name__}, not an object; no numbers")
        return
    row.masked = doc.get("masked") is True
    for key in ("performance", "correctness", "quality_gate", "long_horizon", "experience"):
        if key in doc and doc[key] is not None and not isinstance(doc[key], dict):
            row.problems.append(f"{key} is a {type(doc[key]).__name__}, not an object; ignored")
    perf = _dict(doc.get("performance"))
    geo = _number(perf.get("latency_us_geomean"))
    row.geomean = geo if geo and geo > 0 else None
    if geo is None and perf.get("latency_us") is not None:
        row.problems.append("only latency_us present: no usable geomean")
    arith = _number(perf.get("latency_us_arith_mean"))
    row.arith_mean = arith if arith and arith > 0 else None
    shapes = perf.get("latency_us_by_shape")
    if shapes is not None and not isinstance(shapes, dict):
        row.problems.append("latency_us_by_shape is not an object; ignored")
    dropped = 0
    for key, value in _dict(shapes).items():
        number = _number(value)
        if number is None or number <= 0:
            dropped += 1
            continue
        row.by_shape.append((str(key), number))
    if dropped:
        row.problems.append(f"{dropped} per-shape latencies are not positive numbers; dropped")
    row.speedup_vs_ref = _number(perf.get("speedup_vs_ref_geomean"))
    row.measurement_status = _text(perf.get("measurement_status")) or None
    row.measurement_subject = _text(perf.get("measurement_subject")) or None
    row.measurement_source = _text(perf.get("measurement_source")) or None
    row.carried_from = _text(perf.get("carried_from_version")) or None
    row.improvement_pct = _number(perf.get("authoritative_improvement_pct"))
    correctness = _dict(doc.get("correctness"))
    row.correctness = _text(correctness.get("status")) or None
    row.max_abs_err = _number(correctness.get("max_abs_err"))
    row.max_rel_err = _number(correctness.get("max_rel_err"))
    gate = _dict(doc.get("quality_gate"))
    row.gate = _text(gate.get("result")) or None
    row.gate_failure = _text(gate.get("failure_reason"))[:2000]
    optimization = doc.get("optimization")
    if isinstance(optimization, str):
        row.description = optimization.strip()
    else:
        optimization = _dict(optimization)
        row.category = _text(optimization.get("action_category"))
        row.description = _text(optimization.get("action_description"))
        row.expected_impact = _text(optimization.get("expected_impact"))
    directions = doc.get("open_directions")
    for entry in directions if isinstance(directions, list) else []:
        if isinstance(entry, dict) and _text(entry.get("direction")):
            row.open_directions.append(
                {"direction": _text(entry["direction"]), "rationale": _text(entry.get("rationale"))}
            )
    pitfalls = doc.get("pitfalls_and_fixes")
    for entry in pitfalls if isinstance(pitfalls, list) else []:
        row.pitfalls.append(normalize_pitfall(entry))
    experiments = _dict(doc.get("experience")).get("experiments")
    for position, entry in enumerate(experiments if isinstance(experiments, list) else [], 1):
        if isinstance(entry, dict):
            row.experiments.append({**entry, "index": position})
    row.long_horizon_status = _text(_dict(doc.get("long_horizon")).get("status")) or None
    commit_hash = doc.get("git_commit_hash")
    if isinstance(commit_hash, (str, int)) and not isinstance(commit_hash, bool):
        row.git_commit_hash = str(commit_hash)


# --------------------------------------------------------------------------- captures


def _read_captures(reader: _Reader, non_target: tuple[str, ...], kernels: dict) -> list[Capture]:
    """Rule 9: usable only when summary.txt names the kernel under test, the capture was
    filtered by that name, and the name is not a non-target kernel."""
    repo, tip = reader.repo, reader.commit
    files: dict[str, dict[str, str]] = {}
    for path, _sha in repo.list_tree(tip, "profiles"):
        parts = path.split("/")
        if len(parts) < 3:
            continue
        files.setdefault(parts[1], {})["/".join(parts[2:])] = path
    for link, target in repo.list_symlinks(tip, "profiles"):
        reader.refused.append(f"{link}: symlink to {target!r} in profiles/ is not followed")
    captures = []
    for name in sorted(files):
        match = _PROFILE_DIR.match(name)
        if not match:
            continue
        n, variant = int(match.group(1)), match.group(2) or ""
        entries = files[name]
        directory = f"profiles/{name}"
        kernel, usable, reason = None, False, ""
        if "summary.txt" not in entries:
            reason = "no summary.txt (AMD or raw capture formats name no kernel)"
        else:
            summary = (reader.read(entries["summary.txt"]) or b"").decode("utf-8", "replace")
            found = re.search(r"^Kernel:\s*(.*)$", summary, re.MULTILINE)
            kernel = found.group(1).strip() if found else None
            base = _base_kernel_name(kernel or "")
            metrics = {}
            if "analysis/metrics_key_run.json" in entries:
                metrics = _dict(reader.json(entries["analysis/metrics_key_run.json"]))
            source = kernels.get(n, "")
            if not kernel or kernel == "?":
                reason = "the summary names no kernel"
            elif base in non_target or kernel in non_target:
                reason = f"captured {base}, a non-target kernel"
            elif _base_kernel_name(str(metrics.get("__kernel_name__", ""))) != base:
                reason = "the capture was not filtered by the kernel's name"
            elif source and base not in source:
                reason = f"{base} is not a kernel of this version's kernel.py"
            else:
                usable, reason = True, "names the kernel under test"
        conclusion = ""
        if "REPORT.md" in entries:
            report = (reader.read(entries["REPORT.md"]) or b"").decode("utf-8", "replace")
            conclusion = report_conclusion(report)
        captures.append(Capture(directory, n, variant, kernel, usable, reason, conclusion))
    return captures


def _base_kernel_name(name: str) -> str:
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
    name = "".join(out).split("::")[-1].split()[-1:] or [""]
    return name[0]


_REPORT_ANCHORS = (
    r"\*\*Root cause\*\*:",
    r"## Key Finding",
    r"## (?:Diagnosis|Bottleneck Analysis)",
    r"\*\*Evidence\*\*:",
)


def report_conclusion(report: str) -> str:
    for anchor in _REPORT_ANCHORS:
        match = re.search(anchor + r"(.*)", report, re.DOTALL)
        if match and len(match.group(1).strip()) >= 30:
            return match.group(1).strip()[:1200]
    return "\n".join(report.splitlines()[:20]).strip()[:1200]


# --------------------------------------------------------------------------- the walk


def ingest(repo: Repository, tip: str, label: str, options=None) -> Ingest:
    """Read the trace at ``tip`` into version rows. Raises TraceError only when nothing can
    be mined (no kernel.py at the tip, no hardware); everything else degrades per version."""
    options = options if options is not None else MineOptions()
    reader = _Reader(repo, tip)
    if repo.read(tip, "kernel.py") is None and not repo.is_symlink(tip, "kernel.py"):
        raise TraceError(f"{label}: the trace's HEAD has no kernel.py")
    vendor, arch, product, basis = resolve_hardware(reader, options)
    commits = list(repo.walk(tip))
    commits.reverse()
    order = {c.sha: i for i, c in enumerate(commits)}
    first_add: dict[int, str] = {}
    memory_blob: dict[int, str] = {}
    prefix_commits: dict[int, list] = {}
    kernel_changed: set[str] = set()
    variants, non_version_files, non_version_commits = [], [], []
    journals: dict[str, str] = {}  # commit -> memory/long_horizon_e*.json it added
    for info in commits:
        parent = info.parents[0] if info.parents else None
        for change in repo.changes(parent, info.sha):
            path = change.path
            if path == "kernel.py" and change.kind != "delete":
                kernel_changed.add(info.sha)
            if not path.startswith("memory/") or change.kind == "delete":
                continue
            match = _MEMORY_VERSION.match(path)
            if match:
                n = int(match.group(1))
                first_add.setdefault(n, info.sha)
                memory_blob[n] = change.new_sha
            elif _MEMORY_VARIANT.match(path):
                m = _MEMORY_VARIANT.match(path)
                variants.append({"file": path, "base": f"v{m.group(1)}", "suffix": m.group(2)[1:]})
            elif _LONG_HORIZON.match(path):
                journals[info.sha] = path
                non_version_files.append({"file": path, "reason": "long-horizon evidence"})
            else:
                non_version_files.append({"file": path, "reason": "not a version name"})
        prefix = _VERSION_PREFIX.match(info.subject)
        if prefix:
            prefix_commits.setdefault(int(prefix.group(1)), []).append(info)
        elif not _EPISODE.match(info.subject):
            non_version_commits.append(info.subject[:90])
    rows = []
    kernels: dict[int, str] = {}
    memory_links = {path for path, _ in repo.list_symlinks(tip, "memory")}
    options = options if options is not None else MineOptions()
    dsl_override = options.dsl
    for n in sorted(set(first_add) | set(prefix_commits)):
        row = VersionRow(version=f"v{n}", n=n)
        event = first_add.get(n)
        same_prefix = prefix_commits.get(n, [])
        row.event_sha = event
        if event is not None and event in kernel_changed:
            row.code_sha = event
        else:
            limit = order[event] if event is not None else len(commits)
            code = [c for c in same_prefix if c.sha in kernel_changed and order[c.sha] <= limit]
            row.code_sha = code[-1].sha if code else None
        row.has_commit = bool(event or same_prefix)
        row.sha = row.code_sha or event or (same_prefix[-1].sha if same_prefix else None)
        text_commit = same_prefix[-1] if same_prefix else repo.commit(event)
        row.subject = text_commit.subject
        row.body = (
            text_commit.message.split("\n", 1)[1].strip() if "\n" in text_commit.message else ""
        )
        row.reverted = any(is_reverted(c.subject, "") for c in same_prefix[-1:]) or any(
            is_reverted("", c.message.split("\n", 1)[-1]) for c in same_prefix
        )
        message = f"{row.subject}\n{row.body}"
        row.deadend_items, row.deadend_blob, row.next_direction = parse_deadends(message)
        streak = _STREAK.search(message)
        row.deadend_streak = int(streak.group(1)) if streak else None
        episode = _EPISODE.match(repo.commit(event).subject) if event else None
        if episode:
            row.episode = int(episode.group(1))
            row.journal_path = journals.get(event)
        if row.code_sha:
            row.parent = (repo.commit(row.code_sha).parents or (None,))[0]
        if n in memory_blob:
            row.has_memory = True
            row.memory_path = f"memory/v{n}.json"
            raw = repo.blob(memory_blob[n])
            refused = None
            if len(raw) > MAX_FILE_BYTES:
                raw, refused = None, "memory file over the 8 MiB limit, refused; no numbers"
            elif row.memory_path in memory_links:
                raw, refused = None, "memory file is a symlink, refused; no numbers"
            _apply_memory(row, raw, refused)
        code_commit = row.code_sha or row.sha
        source = None
        if code_commit is not None:
            source = _reader_at(repo, code_commit, reader.refused).read("kernel.py")
        if source is not None:
            try:
                text = source.decode("utf-8")
            except UnicodeDecodeError as exc:
                row.problems.append(f"kernel.py is not UTF-8 (byte {exc.start}); no code")
                text = None
            if text is not None:
                kernels[n] = text
                row.dsl = sniff_dsl(text)
        if dsl_override:
            row.dsl = dsl_override
        rows.append(row)
    non_target = tuple(options.non_target_kernels or DEFAULT_NON_TARGET_KERNELS)
    captures = _read_captures(reader, non_target, kernels)
    definition = _dict(reader.json("definition.json"))
    name = operator_name(label, _text(definition.get("name")) or None)
    slug = operator_slug(name)
    description = _text(definition.get("description"))
    axes = _dict(definition.get("axes"))
    constants = {
        k: v["value"]
        for k, v in axes.items()
        if isinstance(v, dict) and v.get("type") == "const" and v.get("value") is not None
    }
    var_axes = [k for k, v in axes.items() if isinstance(v, dict) and v.get("type") == "var"]
    workload = reader.read("workload.jsonl")
    n_shapes = 0
    if workload is not None:
        n_shapes = sum(
            1 for line in workload.decode("utf-8", "replace").splitlines() if line.strip()
        )
    meta = TraceMeta(
        label=label,
        head=tip,
        operator_name=name,
        operator_slug=slug,
        workload_family=workload_family(slug, description),
        description=description,
        constants=constants,
        var_axes=var_axes,
        n_shapes=n_shapes,
        vendor=vendor,
        arch=arch,
        product=product,
        hardware_basis=basis,
        harness=options.harness or DEFAULT_HARNESS,
    )
    return Ingest(
        meta=meta,
        rows=rows,
        captures=captures,
        variants=variants,
        non_version_files=non_version_files,
        non_version_commits=non_version_commits,
        refused=reader.refused,
    )


def _reader_at(repo: Repository, commit: str, refused: list[str]) -> _Reader:
    """A reader at another commit that reports into the same refusal list."""
    reader = _Reader(repo, commit)
    reader.refused = refused
    return reader
