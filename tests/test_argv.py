"""The read verbs' quick start (gitkb.commands.argv): its table is click's, and every
command line it takes gets exactly the parameters click would pass the verb."""

from __future__ import annotations

import json

import pytest
from helpers import kb

from gitkb.commands import argv
from gitkb.store import Store

QUERY_LINES = [
    [],
    ["softmax"],
    ["online", "softmax", "--arch", "sm_90", "--dsl", "triton", "--family", "op007"],
    ["--arch=hopper", "--brief", "--limit", "5", "--max-bytes", "20000", "tma"],
    ["--vendor", "nvidia", "--vendor", "amd"],  # the last one wins
    ["--exclude", "a,b", "--exclude", "c", "x"],
    ["--min-gain", "1e3", "--min-speedup", "+1.5", "--weight-importance", "3"],
    ["--min-importance", "nan"],
    ["--limit", "0x10"],  # not an int: click says so
    ["--limit", "5_0"],
    ["--tier", "proven", "--rank", "importance", "--no-fallback", "--seed", "7"],
    ["--tier", "Proven"],  # a choice is case-sensitive
    ["--rank", "bogus"],
    ["--strict-arch", "--cross-arch", "--any", "--include-retired", "--explain"],
    ["--json", "--emit-json", "--coverage"],
    ["--fallback-ratio", "0.5", "--symptom", "memory-bound", "--level", "generic"],
    ["--type", "strategy", "--status", "active", "--operator", "gemm"],
    ["--list-arch", "--like", "hop"],
    ["--list-arch", "--list-dsl"],
    ["-", "--arch", "hopper"],
    ["--arch", "-x"],
    ["--arch"],
    ["--brief=yes"],
    ["--bogus"],
    ["-h"],
    ["--help"],
    ["--", "--arch"],
    ["--json", "--store"],
]
RESOLVE_LINES = [
    ["--kernel", "op007", "--arch", "hopper"],
    ["--kernel=softmax", "--product", "h100", "--dsl", "TRITON", "--top-n", "5"],  # folded
    ["--kernel", "x.py", "--dsl", "cobol"],
    ["--kernel", "x", "--format", "geak", "--geak-key", "--include-retired"],
    ["--kernel", "x", "--format", "GEAK"],  # this choice is case-sensitive
    ["--kernel", "x", "--min-speedup", "1.2"],  # click's (a check of its own)
    ["--kernel", "x", "--min-speedup", "nan"],
    ["--kernel", "x", "--out", "somewhere"],  # click's (a path)
    ["--arch", "hopper"],  # --kernel is required: click says so
    ["--kernel", "x", "stray"],
]
SHOW_LINES = [
    ["nvidia.h100.triton.softmax.online"],
    ["-"],
    [],  # RECORD_ID is required: click says so
    ["a", "b"],  # one record: click says so
    ["--bogus", "x"],
    ["x", "-h"],
]
LINES = [
    *(("query", line) for line in QUERY_LINES),
    *(("resolve", line) for line in RESOLVE_LINES),
    *(("show", line) for line in SHOW_LINES),
]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    location = tmp_path_factory.mktemp("argv") / "kb.git"
    Store.init(location, bare=True)
    return str(location)


def test_the_table_is_clicks():
    """``gitkb/commands/argv.json`` is what the click commands declare now (regenerate it
    with ``python -m gitkb.commands.argv``)."""
    assert argv.specs() == json.loads(json.dumps(argv.table()))


def _clicks(verb: str, args: list[str]) -> dict | None:
    import importlib

    import click

    command = importlib.import_module(f"gitkb.commands.{verb}").command
    try:
        with command.make_context(verb, list(args)) as ctx:
            return dict(ctx.params)
    except (click.exceptions.Exit, click.exceptions.ClickException):
        return None


@pytest.mark.parametrize(("verb", "line"), LINES, ids=[f"{v} {' '.join(ln)}" for v, ln in LINES])
def test_a_taken_line_gets_what_click_passes(store_path, verb, line):
    args = [*line, "--store", store_path] if "--store" not in line else line
    quick = argv.parse([verb, *args], {})
    if quick is None:
        return  # click parses it (and says what is wrong, when something is)
    want = _clicks(verb, args)
    taken, group, params = quick
    assert want is not None, f"click refuses {args}; the quick start must not take it"
    assert taken == verb and group == {"verbose": False, "quiet": False}
    assert Store.open(params.pop("store")).location == want.pop("store").location
    assert {k: repr(v) for k, v in params.items()} == {k: repr(v) for k, v in want.items()}


def test_the_plain_lines_are_taken(store_path):
    """The lines an agent writes do not fall back to click."""
    refused = [line for line in QUERY_LINES if argv.parse(["query", *line, "--store", store_path],
                                                            {}) is None]  # fmt: skip
    assert len(QUERY_LINES) - len(refused) >= 15, refused
    for line in (["-h"], ["--help"], ["--bogus"], ["--list-arch", "--list-dsl"], ["--", "x"]):
        assert argv.parse(["query", *line], {}) is None, line
    taken = [ln for ln in RESOLVE_LINES if argv.parse(["resolve", *ln], {}) is not None]
    assert taken == [RESOLVE_LINES[0], RESOLVE_LINES[1], RESOLVE_LINES[3]], taken
    taken = [ln for ln in SHOW_LINES if argv.parse(["show", *ln], {}) is not None]
    assert taken == SHOW_LINES[:2], taken


def test_the_group_flags_and_the_store_variable(store_path):
    verb, group, params = argv.parse(["-v", "query", "tma"], {"GITKB_STORE": store_path})
    assert group == {"verbose": True, "quiet": False} and params["store"] == store_path
    assert argv.parse(["query", "tma"], {})[2]["store"] == "."
    assert argv.parse(["query", "tma"], {"GITKB_STORE": ""}) is None  # click's reading
    assert argv.parse(["-V", "query"], {}) is None and argv.parse(["list"], {}) is None
    assert argv.parse(["resolve", "--kernel", "x"], {"GITKB_STORE": "s"})[2]["store"] == "s"


def test_query_runs_without_click(tmp_path):
    """``git kb query`` answers without importing click, and as click-parsed query does."""
    import subprocess
    import sys

    from helpers import example_files

    store = Store.init(tmp_path / "kb.git", bare=True)
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))
    args = ["query", "--store", str(store.location), "--arch", "sm_90", "softmax", "--json"]
    code = (
        "import sys; from gitkb.cli import main\n"
        f"main({args!r})\n"
        "print('click' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr.strip().splitlines()[-1] == "False", done.stderr
    from click.testing import CliRunner

    from gitkb.cli import cli

    by_click = CliRunner().invoke(cli, args)
    assert by_click.exit_code == 0 and json.loads(by_click.stdout) == json.loads(done.stdout)
    bad = kb("query", "--store", str(store.location), "--arch", "bogus-gpu")
    assert bad.returncode == 2 and bad.stderr.startswith(b"gitkb: error: unknown arch")
