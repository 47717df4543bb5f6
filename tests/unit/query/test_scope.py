"""Like for like: `git kb query` selects what the GPU-wiki query tool selects, flag for flag.

The reference (gpu-wiki/tools/query_wiki.py and the 847-record store) comes from a local
clone of the public alibaba/atrex-kernel-agent repository beside this checkout
(../.mirror/alibaba+atrex-kernel-agent/repo, or GITKB_GPU_WIKI_REPO); the test skips
cleanly without it, and never uses the network. bench/query_gpu_wiki.py asks the whole
battery and prints the figures; this test asks every other question.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers import CONFORMANCE, ROOT

sys.path.insert(0, str(ROOT / "bench"))
import query_gpu_wiki as like

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def reference_repo() -> Path:
    repo = Path(os.environ.get("GITKB_GPU_WIKI_REPO") or like.MIRROR)
    if not repo.exists():
        pytest.skip(f"no clone of the GPU-wiki reference at {repo}")
    return repo


@pytest.mark.parametrize("corpus", ["public-store", "conformance-sample"])
def test_query_selects_what_the_gpu_wiki_tool_selects(corpus, tmp_path):
    repo = reference_repo()
    records = None
    if corpus == "conformance-sample":
        if not CONFORMANCE.is_dir():
            pytest.skip("../shared/conformance is not present")
        records = CONFORMANCE
    tools, wiki = like.reference_tree(repo, tmp_path, records)
    store = like.build_store(wiki, tmp_path / "kb")
    index = json.loads((wiki / "records" / "index.json").read_text())["records"]
    questions = like.cases(index)[::2]
    rows = like.compare(tools, wiki, store, questions)
    differing = [(" ".join(r["flags"]), r["differs"]) for r in rows if r["differs"]]
    assert not differing, differing[:5]
    assert sum(r.get("hits", 0) for r in rows) > 1000  # the selections were not all empty
    assert any(r["reference"] == 2 for r in rows)  # and some questions were refused by both


LISTINGS = [["--list-arch"], ["--list-dsl"], ["--list-family"], ["--list-operators"],
            ["--list-type"], ["--list-symptoms"], ["--list-tags"],
            ["--list-symptoms", "--like", "MEM"], ["--list-tags", "--like", "tma"]]  # fmt: skip


def test_the_listings_are_the_gpu_wiki_tools_line_for_line(tmp_path):
    """``--list-*`` prints the vocabulary GPU-wiki's tool prints, in its order (tokens,
    then prose), on the public store."""
    import contextlib
    import importlib
    import io

    from click.testing import CliRunner

    from gitkb.cli import cli

    tools, wiki = like.reference_tree(reference_repo(), tmp_path, None)
    store = like.build_store(wiki, tmp_path / "kb")
    sys.path.insert(0, str(tools))
    try:
        module = importlib.import_module("query_wiki")
    finally:
        sys.path.remove(str(tools))
    try:
        for flags in LISTINGS:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
                assert module.main(["--json-store", str(wiki), *flags]) in (0, None)
            ours = CliRunner().invoke(cli, ["query", "--store", str(store), *flags])
            assert ours.exit_code == 0, ours.output
            wanted = printed.getvalue().splitlines()
            assert ours.stdout.splitlines() == wanted and wanted, flags
    finally:
        sys.modules.pop("query_wiki", None)
        sys.modules.pop("hardware_identity", None)
