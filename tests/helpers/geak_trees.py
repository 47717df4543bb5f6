"""GEAK kb_artifacts trees for the fidelity tests and bench/geak.py, written as GEAK's own
``experience_store.py write`` lays them out (meta.yaml fields and order, slug, exp id).

``fidelity_tree`` holds what the fidelity checks need: several gfx ids (gfx90 is
how GEAK files gfx90a), three languages, speedup ties broken by the exp id's
time, a direction that differs only by inner spaces, a hinted entry above its
clean sibling, mislabeled and retired entries, backlog exp ids, a sub-unity
speedup, and same-named kernels on other pages. ``QUERIES`` are the resolves
run on it, by gitkb and by GEAK.
"""

from __future__ import annotations

from pathlib import Path

import yaml

SUITE = {"metric_kind": "latency", "bench_key": "b2:0123456789ab", "case_names": ["n4096", "n8192"]}
REPORT = """{strategy}

## Key optimizations
The activations are read once, so loading them evict-first keeps the weights in L2.

## What didn't work
Persistent rows did not help.
"""


def diff(n: int, path: str = "kernels/kernel.py") -> str:
    """A patch whose changed code is ``n``'s own."""
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        "@@ -10,2 +10,2 @@ def kernel(x_ptr, out_ptr, N, BLOCK):\n"
        "     cols = tl.arange(0, BLOCK)\n"
        "-    x = tl.load(x_ptr + cols, mask=cols < N)\n"
        f"+    x = tl.load(x_ptr + cols, mask=cols < N, other={n}.0)\n"
    )


def entry(root: Path, gfx: str, kernel: str, language: str, exp_id: str, speedup, direction: str,
          n: int, *, kernel_class: str = "norm", bench: dict | None = None,
          gpu_arch: str | None = None, patch: str | None = None, **fields) -> Path:  # fmt: skip
    """One entry as GEAK's write leaves it (``fields`` override or add meta keys; ``patch``:
    its patch.diff, else one whose changed code is ``n``'s own)."""
    metric = {
        "speedup": speedup,
        "wall_ms": None,
        "baseline_wall_ms": None,
        "gpu_arch": gpu_arch or gfx,
        "metric_kind": "",
        "bench_key": "",
        "case_names": [],
    }
    metric.update(bench or {})
    meta = {
        "lifecycle": "candidate",
        "gfx": gfx,
        "kernel_class": kernel_class,
        "kernel_name": fields.pop("kernel_name", kernel),
        "language": language,
        "metric": metric,
        "direction": direction,
        "content_signature": "",
        "reproductions": 1,
        "derived_from": "",
        "verified_on": "2025-06-01",
        "verified_stack": {"triton": "3.3.0", "rocm": "6.4.1"},
        "source_eval_dir": "",
        "strategy": f"entry {n}: {direction or 'no direction'}",
        "techniques": [f"technique {n}"],
    }
    meta.update(fields)
    folder = root / gfx / kernel_class / f"{kernel}__{language}__{gfx}" / exp_id
    folder.mkdir(parents=True)
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    (folder / "patch.diff").write_text(diff(n) if patch is None else patch)
    (folder / "report.md").write_text(REPORT.format(strategy=meta["strategy"]))
    return folder


def fidelity_tree(base: Path) -> Path:
    root = base / "kb_artifacts"
    e = entry
    # gfx942 triton rmsnorm: the main page.
    e(root, "gfx942", "rmsnorm", "triton", "20250601_100000_aaaaaa", 1.45, "Evict-First loads", 1,
      bench=SUITE)  # fmt: skip
    e(root, "gfx942", "rmsnorm", "triton", "20250601_090000_bbbbbb", 1.45, "two-pass", 2,
      bench=SUITE)  # fmt: skip  # ties with 1: the older exp id (by its time) leads
    e(
        root,
        "gfx942",
        "rmsnorm",
        "triton",
        "20250602_100000_cccccc",
        "1.4",
        "evict-first  loads ",
        3,
    )
    e(root, "gfx942", "rmsnorm", "triton", "20250603_100000_dddddd", 1.30, "evict-first loads", 4,
      bench={"bench_key": "b:opaque-harness"})  # fmt: skip
    e(root, "gfx942", "rmsnorm", "triton", "20250604_100000_eeeeee", 1.4499999, "persistent rows",
      5,
      attestations={"recalls": 3, "validations": 0, "failures": 2, "not_reproduced": 1,
                    "history": [{"at": "2025-06-05T10:00:00Z", "outcome": "failed"}]})  # fmt: skip
    e(root, "gfx942", "rmsnorm", "triton", "20250605_100000_ffffff", 1.2, "persistent rows", 6)
    e(root, "gfx942", "rmsnorm", "triton", "20250606_100000_a0a0a0", 20.0, "rewrite", 7,
      gpu_arch="gfx950")  # fmt: skip  # mislabeled: served on neither page
    e(root, "gfx942", "rmsnorm", "triton", "20250607_100000_b0b0b0", 1.9, "split reduction", 8,
      retained=False, retired_reason="wrong results on odd N")  # fmt: skip
    e(root, "gfx942", "rmsnorm", "triton", "20250608_100000_c0c0c0", 1.7, "vector width", 9,
      lifecycle="retracted")  # fmt: skip  # GEAK's resolve reads `retained`, not lifecycle
    e(root, "gfx942", "rmsnorm", "triton", "run_07_backlog", 1.35, "", 10)  # a backlog exp id
    e(root, "gfx942", "rmsnorm", "triton", "20250609_100000_d0d0d0", 0.97, "cache hints", 11)
    e(root, "gfx942", "rmsnorm", "triton", "20250610_100000_e0e0e0", 1.03, "", 12, reproductions=3)
    # Other languages of the same kernel on gfx942.
    e(root, "gfx942", "rmsnorm", "hip", "20250611_100000_f0f0f0", 2.5, "LDS tiling", 13)
    e(root, "gfx942", "rmsnorm", "ck", "20250612_100000_abcdef", 3.0, "xdl pipeline", 14)
    # A kernel with a page in HIP only; two same-length names on one page (ambiguous there).
    e(
        root,
        "gfx942",
        "gemm_a8w8",
        "hip",
        "20250613_100000_111111",
        1.6,
        "",
        15,
        kernel_class="gemm",
    )
    e(root, "gfx942", "softmax_fwd", "triton", "20250614_100000_222222", 1.3, "", 16,
      kernel_class="softmax")  # fmt: skip
    e(root, "gfx942", "softmax_bwd", "triton", "20250615_100000_333333", 1.3, "", 17,
      kernel_class="softmax")  # fmt: skip
    # layernorm_fwd on gfx942; on gfx950 also layernorm_bwd: only gfx950 is ambiguous.
    e(root, "gfx942", "layernorm_fwd", "triton", "20250616_100000_444444", 1.25, "", 18)
    e(root, "gfx950", "layernorm_fwd", "triton", "20250617_100000_555555", 1.5, "", 19)
    e(root, "gfx950", "layernorm_bwd", "triton", "20250618_100000_666666", 1.5, "", 20)
    # Other gfx ids: gfx90a as GEAK files it (gfx90), gfx950, gfx1201.
    e(root, "gfx90", "rmsnorm", "triton", "20250619_100000_777777", 1.5, "mfma tiles", 21,
      gpu_arch="gfx90a")  # fmt: skip
    e(root, "gfx90", "rmsnorm", "triton", "20250620_100000_888888", 1.25, "", 22,
      kernel_name="triton_RMSNorm.py")  # fmt: skip
    e(root, "gfx950", "rmsnorm", "triton", "20250621_100000_999999", 1.8, "persistent", 23)
    e(root, "gfx1201", "rmsnorm", "triton", "20250622_100000_aaaaab", 1.4, "wave32", 24)
    return root


def _edit(root: Path, where: str, **fields) -> None:
    path = root / where / "meta.yaml"
    meta = yaml.safe_load(path.read_text())
    meta.update(fields)
    path.write_text(yaml.safe_dump(meta, sort_keys=False))


def curate_fidelity_tree(root: Path) -> None:
    """What GEAK does to the fidelity tree between two imports: its curation retires an
    entry, a lane's attestations land (lifting a hint), a rewrite of entry 1's code counts a
    reproduction (so it now wins its tie), and a new entry is written."""
    page = "gfx942/norm/rmsnorm__triton__gfx942"
    _edit(root, f"{page}/20250602_100000_cccccc", retained=False,
          retired_reason="dominated by entry 1")  # fmt: skip
    _edit(
        root,
        f"{page}/20250604_100000_eeeeee",
        attestations={
            "recalls": 4,
            "validations": 1,
            "failures": 2,
            "not_reproduced": 1,
            "history": [
                {"at": "2025-06-05T10:00:00Z", "outcome": "failed"},
                {"at": "2025-07-01T10:00:00Z", "outcome": "validated", "by": "box-9"},
            ],
        },
    )
    _edit(root, f"{page}/20250601_100000_aaaaaa", reproductions=2, lifecycle="active")
    entry(root, "gfx942", "rmsnorm", "triton", "20250623_100000_bcdbcd", 1.5, "new idea", 25)


# (gitkb resolve options, GEAK resolve options): the same question to both.
QUERIES = [
    (
        {"kernel": "rmsnorm", "product": "gfx942", "dsl": "triton", "top_n": 10},
        {"kernel_name": "rmsnorm", "gfx": "gfx942", "language": "triton", "top_n": 10},
    ),
    (
        {"kernel": "triton_rmsnorm.py", "product": "gfx942"},
        {"kernel_name": "triton_rmsnorm.py", "gfx": "gfx942", "language": "triton"},
    ),
    (
        {
            "kernel": "rmsnorm",
            "product": "gfx942",
            "dsl": "triton",
            "top_n": 10,
            "min_speedup": 0.9,
        },
        {
            "kernel_name": "rmsnorm",
            "gfx": "gfx942",
            "language": "triton",
            "top_n": 10,
            "min_speedup": 0.9,
        },
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx942", "dsl": "triton", "include_retired": True},
        {"kernel_name": "rmsnorm", "gfx": "gfx942", "language": "triton", "include_retired": True},
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx942", "dsl": "hip"},
        {"kernel_name": "rmsnorm", "gfx": "gfx942", "language": "hip"},
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx942", "dsl": "ck"},
        {"kernel_name": "rmsnorm", "gfx": "gfx942", "language": "ck"},
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx90a", "dsl": "triton"},
        {"kernel_name": "rmsnorm", "gfx": "gfx90a", "language": "triton"},
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx90", "dsl": "triton"},
        {"kernel_name": "rmsnorm", "gfx": "gfx90", "language": "triton"},
    ),
    (
        {"kernel": "rmsnorm", "product": "mi250", "dsl": "triton"},
        {"kernel_name": "rmsnorm", "gfx": "gfx90a", "language": "triton"},
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx950", "dsl": "triton"},
        {"kernel_name": "rmsnorm", "gfx": "gfx950", "language": "triton"},
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx1201", "dsl": "triton"},
        {"kernel_name": "rmsnorm", "gfx": "gfx1201", "language": "triton"},
    ),
    (
        {"kernel": "layernorm", "product": "gfx942", "dsl": "triton"},
        {"kernel_name": "layernorm", "gfx": "gfx942", "language": "triton"},
    ),
    (
        {"kernel": "layernorm", "product": "gfx950", "dsl": "triton"},
        {"kernel_name": "layernorm", "gfx": "gfx950", "language": "triton"},
    ),
    (
        {"kernel": "softmax", "product": "gfx942", "dsl": "triton"},
        {"kernel_name": "softmax", "gfx": "gfx942", "language": "triton"},
    ),
    (
        {"kernel": "gemm_a8w8", "product": "gfx942", "dsl": "triton"},
        {"kernel_name": "gemm_a8w8", "gfx": "gfx942", "language": "triton"},
    ),
    (
        {"kernel": "gemm_a8w8", "product": "gfx942", "dsl": "hip"},
        {"kernel_name": "gemm_a8w8", "gfx": "gfx942", "language": "hip"},
    ),
    (
        {"kernel": "no_such_kernel", "product": "gfx942", "dsl": "triton"},
        {"kernel_name": "no_such_kernel", "gfx": "gfx942", "language": "triton"},
    ),
    (
        {"kernel": "rmsnorm", "product": "gfx1200", "dsl": "triton"},
        {"kernel_name": "rmsnorm", "gfx": "gfx1200", "language": "triton"},
    ),
]


def comparable_view(answer: dict) -> dict:
    """What the fidelity checks compare of a GEAK-shaped answer: the read reason, the page,
    the filter counts, and each candidate's entry (relative to its tree), speedup, bench
    key, comparability, direction, hint, counts and alternates, in order."""

    def rel(path: str) -> str:
        parts = path.split("/")
        return "/".join(parts[-4:])

    return {
        "read_reason": answer.get("read_reason"),
        "slug": answer.get("slug"),
        "filtered": answer.get("filtered"),
        "candidates": [
            {
                "exp_dir": rel(c["exp_dir"]),
                "speedup": c["speedup"],
                "bench_key": c["bench_key"],
                "comparable": c["comparable"],
                "direction": c["direction"],
                "techniques": c["techniques"],
                "strategy": c["strategy"],
                "retire_hint": c["retire_hint"],
                "validations": c["validations"],
                "recalls": c["recalls"],
                "alternates": [
                    [rel(a["exp_dir"]), a["speedup"], a["bench_key"]] for a in c["alternates"]
                ],
            }
            for c in answer.get("candidates", [])
        ],
    }
