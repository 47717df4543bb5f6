"""Names a trace gives its records: the DSL of a kernel, the operator, its slug and workload
family (TRACE_FORMAT §4), and technique slugs."""

from __future__ import annotations

import re

from gitkb import targets

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


def slugify(text: str, default: str = "unnamed") -> str:
    """A technique slug: lowercase-hyphenated, version ids and hashes dropped, <= 48 chars."""
    text = _HEXISH.sub(" ", _VERSION_TOKEN.sub(" ", text.lower()))
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if len(slug) > 48:
        cut = slug[:49].rfind("-")
        slug = slug[: cut if cut > 12 else 48]
    return slug.strip("-") or default
