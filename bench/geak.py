"""GEAK import as a sync: import of an N-entry GEAK tree, then its re-import after C
changes (retirements, attestations, reproductions), both timed in one run; the re-import
should cost in proportion to the changes, not to the tree.

With ``--geak PATH`` (GEAK's ``kernel_workflow/scripts/experience_store.py``, from
iAmir97/GEAK @ a6a9d0e or a checkout of it), it also runs GEAK's own ``resolve`` beside
``git kb resolve --format geak`` on the fidelity tree (tests/helpers/geak_trees.py), on that tree
after curation, and on the tree ``git kb export geak`` writes, and prints how many
answers agree; ``--write-expected FILE`` records GEAK's answers for the tests.

    python bench/geak.py [--entries 2000] [--changes 100] [--geak PATH [--write-expected F]]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from figures import figure  # noqa: E402
from helpers import geak_trees  # noqa: E402

from gitkb.importers import import_tree  # noqa: E402
from gitkb.store import Store  # noqa: E402
from gitkb.warmstart.resolve import resolve  # noqa: E402

GFX = ("gfx942", "gfx950", "gfx90", "gfx1201")
LANGUAGES = ("triton", "hip", "ck")


def big_tree(base: Path, entries: int) -> list[Path]:
    """``entries`` entries over 4 gfx ids, 3 languages, 10 entries a page."""
    root, folders = base / "kb_artifacts", []
    for n in range(entries):
        page = n // 10
        gfx, language = GFX[page % len(GFX)], LANGUAGES[page // len(GFX) % len(LANGUAGES)]
        folders.append(geak_trees.entry(
            root, gfx, f"kernel_{page:04d}", language, f"20250601_{n:06d}_{n % 0xFFFFFF:06x}",
            1.05 + (n % 10) / 10, f"direction {n % 4}", n, kernel_class=f"class{page % 7}",
        ))  # fmt: skip
    return folders


def curate_tree(folders: list[Path], changes: int) -> None:
    """What GEAK's curation does between two imports, to ``changes`` entries: a third
    retired, a third attested, a third measured again."""
    import yaml

    step = max(1, len(folders) // changes)
    for k, folder in enumerate(folders[::step][:changes]):
        meta = yaml.safe_load((folder / "meta.yaml").read_text())
        if k % 3 == 0:
            meta.update(retained=False, retired_reason="dominated by a later entry")
        elif k % 3 == 1:
            meta["attestations"] = {"recalls": 2, "validations": 1, "failures": 1,
                                    "not_reproduced": 0}  # fmt: skip
        else:
            meta["reproductions"] = 2
        (folder / "meta.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))


def timed(store, folder) -> tuple[float, object]:
    started = time.perf_counter()
    report = import_tree("geak", store, folder)
    return time.perf_counter() - started, report


def geak_answer(geak: str, root: Path, query: dict, refs: Path) -> dict:
    args = [sys.executable, geak, "resolve", "--root", str(root), "--refs-dir", str(refs)]
    for key, value in query.items():
        flag = "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return geak_trees.comparable_view(json.loads(done.stdout))


def gitkb_answer(store, query: dict) -> dict:
    options = dict(query)
    kernel = options.pop("kernel")
    return geak_trees.comparable_view(resolve(store, kernel, shape="geak", **options))


def side_by_side(geak: str, work: Path, expected_out: str | None) -> int:
    """Agreement of GEAK's resolve and gitkb's on the fidelity tree, after curation, and
    on gitkb's export; the number of disagreements."""
    from gitkb.importers.geak.export import export_tree

    recorded: dict[str, list] = {}
    disagreements = 0

    def check(name: str, root: Path, kb_store) -> None:
        nonlocal disagreements
        agree = 0
        for ours, theirs in geak_trees.QUERIES:
            expected = geak_answer(geak, root, theirs, work / "refs")
            recorded.setdefault(name, []).append(expected)
            got = gitkb_answer(kb_store, ours)
            if got == expected:
                agree += 1
            else:
                disagreements += 1
                print(f"  {name}: {ours} differs:\n    geak  {expected}\n    gitkb {got}")
        print(f"{name}: GEAK and gitkb agree on {agree} of {len(geak_trees.QUERIES)} resolves")

    tree = geak_trees.fidelity_tree(work / "fidelity")
    store = Store.init(work / "fidelity-store")
    import_tree("geak", store, tree.parent)
    check("tree", tree, store)
    geak_trees.curate_fidelity_tree(tree)
    import_tree("geak", store, tree.parent)  # the curation, as a sync
    check("curated", tree, store)
    fresh = Store.init(work / "curated-store")
    import_tree("geak", fresh, tree.parent)
    check("curated_fresh", tree, fresh)
    export_tree(store, work / "exported")
    check("exported", work / "exported" / "kb_artifacts", store)
    if expected_out:
        Path(expected_out).write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        print(f"GEAK's answers written to {expected_out}")
    return disagreements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--geak", help="GEAK's experience_store.py: run its resolve beside gitkb")
    parser.add_argument("--write-expected", help="with --geak: write GEAK's answers here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.geak:
            return 1 if side_by_side(args.geak, work, args.write_expected) else 0
        folders = big_tree(work / "tree", args.entries)
        store = Store.init(work / "store", bare=True)
        first, report = timed(store, work / "tree")
        print(f"import of {args.entries} entries: {first:.2f} s ({report.imported} records)")
        # Copies of the synced store, so the re-import after the changes is timed twice too
        # (the machine is shared: each figure is the best of its runs).
        copies = [store] + [Store.open(shutil.copytree(store.location, work / f"copy{n}"))
                            for n in (1, 2)]  # fmt: skip
        same = min(timed(s, work / "tree")[0] for s in copies)
        print(f"re-import of the unchanged tree: {same:.2f} s (best of 3; the floor: every "
              "entry's files hashed and its record read)")  # fmt: skip
        curate_tree(folders, args.changes)
        runs = [timed(s, work / "tree") for s in copies]
        again, report = min(runs, key=lambda run: run[0])
        print(f"re-import after {args.changes} changes: {again:.2f} s (best of 3; "
              f"{len(report.steps)} steps, {len(report.commits)} commits)")  # fmt: skip
        per_change = max(0.0, again - same) / args.changes
        per_entry = first / args.entries
        print(f"per change {per_change * 1000:.1f} ms vs per imported entry "
              f"{per_entry * 1000:.1f} ms; re-import / import {again / first:.3f} "
              f"(changed share of the tree {args.changes / args.entries:.3f})")  # fmt: skip
        # A change costs about what importing its entry did, never a re-read of the tree:
        # within 3x, as each change is a commit of its own (a retraction gates the record
        # again) where an import lands all its records in one.
        figure("geak_reimport_per_change_vs_import_per_entry", per_change / per_entry, "x",
               3.0, "lower")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
