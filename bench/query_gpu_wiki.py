"""Like for like: `git kb query` and the GPU-wiki query tool select the same records.

The public GPU-wiki store (alibaba/atrex-kernel-agent, gpu-wiki/kernel_wiki: 847
records) ships its own query tool, gpu-wiki/tools/query_wiki.py. This script takes
both from a local clone of that repository (a bare one works; nothing is fetched),
imports the records into a fresh gitkb store (`git kb import gpu-wiki`), then asks
both tools the same questions, flag for flag, and compares what each selects: the
ids in rank order, how each hit was reached (match.arch), the answer's kind and
counts (served, scoped pool, store total), the zero-match diagnosis, and the
served payloads. A question the reference refuses (exit 2) must be refused by
gitkb too. Fallback samples are compared by kind and size only (a random sample
of the pool, drawn in each store's own order).

Both tools run in this process (the reference tool's main() with stdout captured)
so a few hundred questions take seconds.

With --time, both tools then answer the issue's two agent questions (a scoped one,
and a whole vendor) as whole processes, as their users run them, interleaved round
by round so a busy machine slows both alike: gitkb as installed (`git kb query`, the
`git-kb` script an install writes, its bytecode compiled once), the reference as its
script (`python query_wiki.py`). The figure is gitkb's median over the reference's, per question;
each timed answer is checked to select what the reference selects. Timed with them, the
floor: a process that imports only what any gitkb read verb needs before a module of its
own (click, dataclasses, hashlib, json, sqlite3), so a figure can be read against it.

    python bench/query_gpu_wiki.py [--repo PATH] [--records DIR] [--keep DIR] [--show N]
                                   [--time [--runs N]]

--repo: the clone (default ../.mirror/alibaba+atrex-kernel-agent/repo beside this
checkout); --records: another GPU-wiki records tree to ask instead (e.g. the
282-record sample under ../shared/conformance), indexed by the reference's own
reindexer.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIRROR = ROOT.parent / ".mirror" / "alibaba+atrex-kernel-agent" / "repo"
TOOLS = "gpu-wiki/tools"
KERNEL_WIKI = "gpu-wiki/kernel_wiki"

ARCH_TOKENS = ("sm_90", "9.0", "H100", "H20", "h800", "gfx942", "mi300x", "mi308x", "hopper",
               "blackwell", "sm_100", "10.0", "b200", "b300", "sm_120", "12.0", "cdna3", "cdna4",
               "mi355x", "gfx950", "rdna4", "gfx1201", "generic", "any", "a100", "sm_89",
               "bogus-gpu")  # fmt: skip
TERMS = ("softmax", "tma", "memory bound", "fp8 gemm", "attention", "moe", "warp", "register",
         "pipeline", "layernorm", "swizzle", "xyzzy")  # fmt: skip


def reference_tree(repo: Path, dest: Path, records: Path | None = None) -> tuple[Path, Path]:
    """(tools dir, kernel_wiki dir) of the reference, extracted from the clone with git."""
    archive = subprocess.run(
        ["git", f"--git-dir={repo}", "archive", "HEAD", TOOLS, *([] if records else [KERNEL_WIKI])],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    tools, wiki = dest / TOOLS, dest / KERNEL_WIKI
    if records is not None:
        import shutil

        shutil.copytree(records / "records", wiki / "records")
        # The reference's own reindexer writes the index its query tool reads.
        subprocess.run(
            [sys.executable, str(tools / "reindex_kernel_wiki.py")], capture_output=True, check=True
        )
    return tools, wiki


def build_store(wiki: Path, dest: Path) -> Path:
    from gitkb.importers import import_tree
    from gitkb.store import Store

    store = Store.init(dest)
    import_tree("gpu-wiki", store, wiki)
    return dest


def cases(index: list[dict]) -> list[list[str]]:
    """The questions: every arch token, dsl, type, tier and symptom alone and crossed,
    families and operators, free text, ranking modes and the arch switches."""
    scopes = [e["retrieval"]["scope"] for e in index]
    dsls = sorted({s.get("dsl") for s in scopes if s.get("dsl")})
    types = sorted({e["type"] for e in index})
    families = sorted({s["operator_family"] for s in scopes if s.get("operator_family")})
    operators = sorted({o for s in scopes for o in s.get("operators") or [] if o})
    symptoms = sorted({x for e in index for x in e["retrieval"]["signals"].get("symptoms") or []})
    out: list[list[str]] = [[]]
    out += [["--arch", a] for a in ARCH_TOKENS]
    out += [["--dsl", d] for d in dsls] + [["--type", t] for t in types]
    out += [["--tier", t] for t in ("provisional", "cautionary", "proven")]
    out += [["--family", f] for f in families[::3]] + [["--operator", o] for o in operators[::5]]
    out += [["--symptom", s] for s in symptoms[::2]] + [["--symptom", "launch-overhead"]]
    out += [["--symptom", "memory bound"], ["--family", "moe"], ["--operator", "gem"]]
    out += [["--dsl", "cute-dsl"], ["--type", "Anti_Strategy"], ["--vendor", "nvida"]]
    out += [t.split() for t in TERMS] + [["--any", *t.split()] for t in TERMS if " " in t]
    for arch in ("sm_90", "gfx942", "b200", "sm_120", "cdna4"):
        for dsl in ("triton", "gluon", "flydsl", "cutedsl"):
            out.append(["--arch", arch, "--dsl", dsl])
        for t in types:
            out.append(["--arch", arch, "--type", t, "--dsl", "any"])
        for term in TERMS[:8]:
            out.append(["--arch", arch, *term.split()])
        out += [["--arch", arch, "--strict-arch"], ["--arch", arch, "--cross-arch", "tma"]]
        out += [["--arch", arch, "--rank", "text", "pipeline"], ["--arch", arch, "--rank",
                "importance"], ["--arch", arch, "--vendor", "generic"]]  # fmt: skip
    out += [["--arch", "sm_90", "--dsl", "triton", "--type", "anti-strategy", "softmax"],
            ["--arch", "sm_90", "--type", "anti-strategy", "--family", families[0]],
            ["--arch", "H20", "--symptom", "memory-bound"], ["--arch", "mi300x", "tma"],
            ["--arch", "sm_100", "--dsl", "gluon", "--tier", "cautionary", "fma"],
            ["--level", "generic", "--type", "doc"], ["--status", "active", "warp"],
            ["--min-importance", "0.5"], ["--min-gain", "1"], ["--min-speedup", "1.1"],
            ["--weight-importance", "3", "register"], ["--arch", "hopper", "--brief"],
            ["--arch", "gfx942", "--brief", "--max-bytes", "6000"]]  # fmt: skip
    return [[*c, "--limit", "1000"] if "--max-bytes" not in c else c for c in out]


def run_reference(module, wiki: Path, flags: list[str]) -> tuple[int, dict | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = module.main(["--json-store", str(wiki), "--emit-json", "--seed", "7", *flags])
    except SystemExit as exc:
        code = exc.code
    return int(code or 0), json.loads(out.getvalue()) if code in (0, None) else None


def run_gitkb(store: Path, flags: list[str]) -> tuple[int, dict | None]:
    from click.testing import CliRunner

    from gitkb.cli import cli
    from gitkb.errors import GitkbError

    argv = ["query", "--store", str(store), "--json", "--seed", "7", *flags]
    result = CliRunner().invoke(cli, argv)
    if isinstance(result.exception, GitkbError):
        return result.exception.exit_code, None
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, json.loads(result.stdout) if result.exit_code == 0 else None


def selection(doc: dict) -> dict:
    """What a query selected, in a form both tools' answers reduce to."""
    records = doc["records"]
    hits = records.items() if isinstance(records, dict) else [(r["id"], r) for r in records]
    result = doc["result"]
    kind = result["kind"]
    because = (result.get("empty_because") or {}).get("single_filter_removals_that_would_match")
    elsewhere = result.get("available_elsewhere") or {}
    return {
        "kind": kind,
        "served": result["served"],
        "scoped_pool": result["scoped_pool"],
        "store_total": result["store_total"],
        "dropped_for_budget": result.get("dropped_for_budget"),
        "empty_because": because,
        "elsewhere": elsewhere.get("matches_on_other_architectures_of_this_vendor"),
        "symptom_match_mode": doc["query"].get("symptom_match_mode"),
        # a fallback is a random sample: its size is compared, not its members
        "hits": None if kind == "fallback" else [(i, h["match"]["arch"]) for i, h in hits],
        "payloads": None
        if kind == "fallback"
        else [(h["applies_to"], h["payload"]) for _, h in hits],
    }


def compare(tools: Path, wiki: Path, store: Path, questions: list[list[str]]) -> list[dict]:
    """One row a question: the flags, both exit codes, and where the selections differ."""
    sys.path.insert(0, str(tools))
    try:
        module = importlib.import_module("query_wiki")
    finally:
        sys.path.remove(str(tools))
    rows = []
    for flags in questions:
        want_code, want = run_reference(module, wiki, flags)
        got_code, got = run_gitkb(store, flags)
        row = {"flags": flags, "reference": want_code, "gitkb": got_code, "differs": []}
        if (want_code == 0) != (got_code == 0) or want_code != got_code:
            row["differs"].append("exit code")
        elif want is not None and got is not None:
            a, b = selection(want), selection(got)
            row["differs"] = [k for k in a if a[k] != b[k]]
            row["hits"] = len(a["hits"] or [])
        rows.append(row)
    sys.modules.pop("query_wiki", None)
    sys.modules.pop("hardware_identity", None)
    return rows


# The agent questions timed (--time); the table measured these.
TIMED = {
    "scoped": ["--vendor", "nvidia", "--arch", "hopper", "--dsl", "triton", "--family",
               "flash-attention", "softmax", "tiling"],
    "whole vendor": ["--vendor", "nvidia"],
}  # fmt: skip
TARGET_RATIO = 0.75
# What any gitkb read verb must import under the house rules, before a module of its own:
# the CLI library, the value classes, blob ids, JSON and the index cache's SQLite. Timed
# beside both tools (--time), a process that imports these and does nothing else.
FLOOR = ("click", "dataclasses", "hashlib", "json", "sqlite3")


def timing(tools: Path, wiki: Path, store: Path, work: Path, runs: int) -> dict[str, tuple]:
    """(gitkb ms, reference ms, whether they selected alike) of each timed question: medians
    of ``runs`` interleaved whole-process runs."""
    import statistics

    from resolve import interleaved, timed_ms
    from stores import GIT_KB, bytecode_note, installed_env

    env = installed_env(work, ROOT)
    print(bytecode_note(env))
    commands, outputs = {}, {}
    for name, flags in TIMED.items():
        commands[f"gitkb {name}"] = [*GIT_KB, "query", "--store", str(store), "--json", *flags]
        commands[f"reference {name}"] = [
            sys.executable,
            str(tools / "query_wiki.py"),
            "--json-store",
            str(wiki),
            "--emit-json",
            *flags,
        ]
        for tool in ("gitkb", "reference"):  # once untimed: the bytecode, the cache
            outputs[f"{tool} {name}"] = json.loads(timed_ms(commands[f"{tool} {name}"], env)[1])
    commands["floor"] = [sys.executable, "-c", f"import {', '.join(FLOOR)}"]
    times = interleaved(commands, runs, env)
    out = {}
    for name in TIMED:
        same = selection(outputs[f"gitkb {name}"]) == selection(outputs[f"reference {name}"])
        out[name] = (statistics.median(times[f"gitkb {name}"]),
                     statistics.median(times[f"reference {name}"]), same)  # fmt: skip
    out["floor"] = (statistics.median(times["floor"]), 0.0, True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=MIRROR, help="clone of atrex-kernel-agent")
    parser.add_argument("--records", type=Path, help="another GPU-wiki tree (has records/)")
    parser.add_argument("--keep", type=Path, help="work here and keep it (reused if present)")
    parser.add_argument("--show", type=int, default=5, help="differences to print")
    parser.add_argument("--time", action="store_true", help="also time both tools")
    parser.add_argument("--runs", type=int, default=15, help="timed rounds (--time)")
    args = parser.parse_args()
    if not args.repo.exists():
        raise SystemExit(f"no clone of the reference at {args.repo} (pass --repo)")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        tools, wiki = work / TOOLS, work / KERNEL_WIKI
        store = work / "kb"
        if not store.exists():  # --keep reuses what an earlier run built
            tools, wiki = reference_tree(args.repo, work, args.records)
            build_store(wiki, store)
        built = time.perf_counter() - start
        index = json.loads((wiki / "records" / "index.json").read_text())["records"]
        questions = cases(index)
        start = time.perf_counter()
        rows = compare(tools, wiki, store, questions)
        asked = time.perf_counter() - start
        timed = timing(tools, wiki, store, work, args.runs) if args.time else {}
    same = [r for r in rows if not r["differs"]]
    refused = sum(1 for r in rows if r["reference"] == 2 and not r["differs"])
    print(f"store                 {len(index)} records (reference tree and gitkb store "
          f"built in {built:.1f} s)")  # fmt: skip
    print(f"questions             {len(rows)} ({asked:.1f} s, both tools)")
    print(f"same selection        {len(same)} of {len(rows)} "
          f"({refused} refused by both, exit 2)")  # fmt: skip
    print(f"records compared      {sum(r.get('hits', 0) for r in same)} hits, in rank order")
    for row in [r for r in rows if r["differs"]][: args.show]:
        print(f"  differs on {', '.join(row['differs'])}: {' '.join(row['flags'])}")
    from figures import figure

    figure("query like-for-like with GPU-wiki", 100.0 * len(same) / len(rows), "%", 100, "higher")
    floor = timed.pop("floor", None)
    for name, (ours, theirs, alike) in timed.items():
        print(f"{name:21} gitkb {ours:6.1f} ms, query_wiki.py {theirs:6.1f} ms (median of "
              f"{args.runs}; {'same' if alike else 'DIFFERENT'} selection)")  # fmt: skip
        figure(f"query time over GPU-wiki's query_wiki.py, {name}", ours / theirs, "x",
               TARGET_RATIO, "lower")  # fmt: skip
    if floor is not None:
        print(f"floor                 {floor[0]:6.1f} ms: python -c 'import {', '.join(FLOOR)}' "
              f"(median of {args.runs}), the imports a read verb needs before its own")  # fmt: skip


if __name__ == "__main__":
    main()
