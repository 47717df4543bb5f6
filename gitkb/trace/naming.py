"""Names a trace gives its records: the DSL of a kernel, the operator, its slug and workload
family (docs/trace-format.md §4), and technique slugs."""

from __future__ import annotations

import re

# docs/trace-format.md §4.3. Operators whose story is one technique set at another shape or dtype
# share a name, so traces of one kernel at different shapes meet in match and warm start.
MERGE_RULES = (
    (re.compile(r"^gemm_n\d+_k\d+$"), "dense-gemm-shape-sweep"),
    (re.compile(r"^(?:fused_add_)?rmsnorm_h\d+$"), "rmsnorm-and-fused-add-rmsnorm"),
    (re.compile(r"^gqa_paged_decode_"), "gqa-paged-decode"),
    (re.compile(r"^gqa_paged_prefill_"), "gqa-paged-prefill-causal"),
    (re.compile(r"^gqa_ragged_prefill_"), "gqa-ragged-prefill-causal"),
    (re.compile(r"^mla_paged_decode_"), "mla-paged-decode"),
    (re.compile(r"^mla_paged_prefill_"), "mla-paged-prefill-causal"),
    (re.compile(r"^moe_fp8_block_scale_"), "moe-fp8-block-scale-routing"),
)
ABBREVIATIONS = {
    "accumulation": "accum", "aggregation": "agg", "attention": "attn", "backward": "bwd",
    "calculation": "compute", "computation": "compute", "convolution": "conv",
    "distribution": "dist", "embedding": "embed", "forward": "fwd", "generation": "gen",
    "hypernetwork": "hypernet", "multihead": "mha", "multimodal": "mm",
    "normalization": "norm", "position": "pos", "positional": "pos", "preparation": "prep",
    "projection": "proj", "residual": "res", "sequence": "seq", "variable": "var",
}  # fmt: skip
DROP_WORDS = {"with", "and", "the", "a", "of", "for", "to", "using", "based"}
# Leading path segments that hold operators rather than name one.
CONTAINER_WORDS = {
    "root", "home", "users", "user", "workspace", "work", "projects", "project", "src",
    "repos", "repo", "code", "tmp", "mnt", "data", "opt", "traces", "trace", "kernels",
}  # fmt: skip
MAX_WORDS = 5
# Entry points that name no operator (the Atrex producer's kernel.py::run / ::Model).
GENERIC_ENTRY_POINTS = {"run", "model", "modelnew", "forward", "main", "kernel", "launch", "call"}
_DEVICE_KERNEL = re.compile(
    r"@(?:triton|gluon|tl|cute|cutlass\.cute|tilelang|flydsl)\.(?:jit|kernel)\b[^\n]*\n"
    r"(?:\s*@[^\n]*\n)*\s*def\s+([A-Za-z_]\w*)"
    r"|__global__\s+(?:void\s+)?([A-Za-z_]\w*)\s*\("
)
_TOP_LEVEL = re.compile(r"^(?:def|class)\s+([A-Za-z]\w*)", re.MULTILINE)
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
_HEXISH = re.compile(r"\b[0-9a-f]{7,40}\b")
_VERSION_TOKEN = re.compile(r"\bv\d+\b", re.IGNORECASE)


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


def normalise(name: str) -> str:
    """The operator in a name: campaign prefixes (``kernel_opt_<N>_``, also inside a
    flattened path), a leading number, leading container words and punctuation removed."""
    name = re.sub(r"^[-_.]+", "", name or "")
    name = re.sub(r"^.*?kernel[-_]opt[-_]\d+[-_]", "", name)
    name = re.sub(r"^kernel_opt_\d+_", "", name)
    name = re.sub(r"^\d+[-_]", "", name)
    parts = [p for p in re.split(r"[^\w]+|_", name) if p]
    while len(parts) > 1 and parts[0].lower() in CONTAINER_WORDS:
        parts.pop(0)
    return "_".join(parts)


def operator_slug(name: str) -> str:
    """``gqa_paged_decode_h32_kv8`` -> ``gqa-paged-decode``: a merge rule, else up to five
    words, abbreviated, grammar words and bare numbers dropped; ``unknown`` when empty."""
    name = normalise(name).lower()
    for rule, slug in MERGE_RULES:
        if rule.match(name):
            return slug
    words = [w for w in re.split(r"[_\-]+", name) if w and not w.isdigit()]
    words = [ABBREVIATIONS.get(w, w) for w in words]
    words = [w for w in words if w not in DROP_WORDS]
    return "-".join(words[:MAX_WORDS]) or "unknown"


def entry_point(source: str | None, declared: str | None = None) -> str | None:
    """The operator a kernel's entry point names: the symbol ``solution.json`` declares
    (``kernel.py::<symbol>``) unless it is generic, else the first device kernel
    (``@triton.jit``, ``@gluon.jit``, ``__global__``, ...), else the first public top-level
    function or class; ``_kernel``/``kernel_`` affixes removed."""
    candidates = []
    if declared and "::" in declared:
        candidates.append(declared.rsplit("::", 1)[1].strip())
    if source:
        candidates += [a or b for a, b in _DEVICE_KERNEL.findall(source)]
        candidates += _TOP_LEVEL.findall(source)
    for symbol in candidates:
        name = re.sub(r"(?:^kernels?_|_kernels?$)", "", symbol, flags=re.IGNORECASE)
        if name and name.lower() not in GENERIC_ENTRY_POINTS and not name.startswith("_"):
            return name
    return None


def workload_family(slug: str, description: str = "") -> str:
    words = set(re.split(r"[^a-z0-9_]+", f"{slug.replace('-', ' ')} {description}".lower()))
    joined = slug.lower()
    for family, keys in _FAMILIES:
        if any(k in words or (len(k) > 3 and k in joined) for k in keys):
            return family
    return "misc"


def slugify(text: str, default: str = "unnamed") -> str:
    """A technique slug: lowercase-hyphenated, version ids and hashes dropped, <= 48 chars."""
    text = _HEXISH.sub(" ", _VERSION_TOKEN.sub(" ", text.lower()))
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if len(slug) > 48:
        cut = slug[:49].rfind("-")
        slug = slug[: cut if cut > 12 else 48]
    return slug.strip("-") or default
