"""Technique identity: the detector's precision and recall on levers labeled by hand.

Two sets, scored apart. The tuned set (``tests/data/techniques_labeled.json``, 100+
levers: the shipped examples, the trace builders' levers, traces shaped like the Atrex
producer's, the issue's own words, diffs written for Triton, CUDA, HIP, CK and CuTe, and
records of the public GPU-wiki sample read from ``../shared/conformance`` when it is
there) is what the patterns were written against: its figure is an upper bound. The
held-out set (``tests/data/techniques_held_out.json``) was written in batches, each before
the patterns it is scored against were changed for it; each batch is reported on its own.
Both are scored as gitkb runs the detector (``gitkb.testing.technique_levers``). Targets,
on the tuned set: recall >= 0.9, precision >= 0.95; on every set together: no two
differently labeled levers given one key.

Also timed, best of ``--runs``: the detector over every lever against the slug a record's
technique was before the vocabulary (``operator_slug`` of the sentence), in the same run.

    python bench/techniques.py [--wiki PATH] [--runs 5] [--misses]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from figures import figure  # noqa: E402

from gitkb.testing import technique_levers as levers  # noqa: E402
from gitkb.trace import techniques  # noqa: E402
from gitkb.trace.naming import operator_slug  # noqa: E402

LABELED = ROOT / "tests" / "data" / "techniques_labeled.json"
HELD_OUT = ROOT / "tests" / "data" / "techniques_held_out.json"
WIKI = ROOT.parent / "shared" / "conformance" / "gpu-wiki-sample"


def _best(runs: int, work: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def _report(title: str, score: levers.Score, misses: bool) -> None:
    """One set's figures: per origin, then precision, recall and its own merges."""
    print(f"{title}: {len(score.levers)} levers scored ({len(score.skipped)} skipped: their "
          f"record is not here)")  # fmt: skip
    by_origin: dict[str, list[levers.Scored]] = {}
    for lever in score.levers:
        by_origin.setdefault(lever.origin, []).append(lever)
    for origin, found in sorted(by_origin.items()):
        right = sum(1 for lever in found if lever.right)
        print(f"  {origin:15} {right:3} of {len(found):3} right")
    print(f"  true positives {score.true_positives}, false positives {score.false_positives}, "
          f"false negatives {score.false_negatives}")  # fmt: skip
    print(f"  precision {score.precision:.3f}, recall {score.recall:.3f}, merges "
          f"{len(score.merges())}")  # fmt: skip
    if misses:
        for lever in score.misses():
            print(f"    miss {lever.id}: labeled {lever.label!r}, detected {lever.predicted!r} "
                  f"({lever.source})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--wiki", type=Path, default=WIKI, help="the GPU-wiki sample's folder")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--misses", action="store_true", help="print every wrong lever")
    args = parser.parse_args()
    labeled = levers.labeled_set(LABELED)
    held = levers.labeled_set(HELD_OUT)
    wiki = args.wiki if args.wiki.is_dir() else None
    print(f"technique vocabulary {techniques.vocabulary().version}: "
          f"{len(techniques.vocabulary().techniques)} techniques")  # fmt: skip
    score = levers.score(labeled, wiki)
    _report("tuned set (the patterns were written against it: an upper bound)", score,
            args.misses)  # fmt: skip
    batches: dict[int, list[dict]] = {}
    for lever in held:
        batches.setdefault(int(lever["batch"]), []).append(lever)
    held_scores = {n: levers.score(found, None) for n, found in sorted(batches.items())}
    for n, held_score in held_scores.items():
        _report(f"held-out batch {n}", held_score, args.misses)
    every = levers.Score(
        score.levers + tuple(lv for s in held_scores.values() for lv in s.levers), ()
    )
    merges = every.merges()
    print(f"merges over every set: {len(merges)} (target 0)")
    for key, a, b in merges[:10]:
        print(f"  {key}: {a} and {b}")
    sentences = [(lever.get("diff", ""), lever.get("sentence", ""), lever.get("dsl"))
                 for lever in labeled if "sentence" in lever]  # fmt: skip
    vocabulary = techniques.vocabulary()

    def detect() -> None:
        for diff, sentence, dsl in sentences:
            vocabulary.detect(diff, sentence, dsl)

    def slug() -> None:
        for _, sentence, _ in sentences:
            operator_slug(sentence.replace(" ", "-"))

    detector, baseline = _best(args.runs, detect), _best(args.runs, slug)
    n = len(sentences)
    print(f"detector: {detector / n * 1e6:.1f} us a lever; the slug it replaces "
          f"{baseline / n * 1e6:.1f} us (ratio {detector / baseline:.1f}x)")  # fmt: skip
    figure("technique detector precision", score.precision, "", 0.95, "higher")
    figure("technique detector recall", score.recall, "", 0.9, "higher")
    figure("technique levers merged", len(merges), "pairs", 0, "lower")
    for n, held_score in held_scores.items():
        figure(f"technique held-out batch {n} precision", held_score.precision, "", 0.95,
               "higher")  # fmt: skip
        figure(f"technique held-out batch {n} recall", held_score.recall, "", 0.9, "higher")
    ok = score.precision >= 0.95 and score.recall >= 0.9 and not merges
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
