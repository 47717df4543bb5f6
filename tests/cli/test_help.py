"""Every verb answers -h, `git kb help VERB` works, and unexpected failures stay one line."""

from __future__ import annotations

import importlib
import tomllib

import pytest
from helpers import ROOT, example_files, kb, unmeasured_env

from gitkb.cli import COMMANDS, main

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_every_verb_has_help(verb):
    result = kb(verb, "-h")
    assert result.returncode == 0, result.stderr
    assert b"Usage: git-kb " + verb.encode() in result.stdout


def test_top_level_help_lists_every_verb():
    result = kb("--help")
    assert result.returncode == 0
    for verb in COMMANDS:
        assert verb.encode() in result.stdout
    check = kb("frobnicate")  # unknown verb: a usage error, exit 2
    assert check.returncode == 2 and b"No such command" in check.stderr


def test_help_verb():
    assert b"Usage: git-kb admit" in kb("help", "admit").stdout
    assert kb("help", "nope").returncode == 2


def test_help_does_not_import_heavy_modules():
    import subprocess
    import sys

    code = (
        "import sys; from gitkb.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('dulwich', 'jsonschema', 'gitkb.store') if m in sys.modules]\n"
        "print('heavy=' + ','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=unmeasured_env()
    )
    assert out.stdout.strip().splitlines()[-1] == "heavy=", out.stdout


def _modules_loaded(argv: list[str]) -> set[str]:
    """The modules ``git kb ARGV`` loads, run as a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys; from gitkb.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print('\\nloaded=' + ','.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=unmeasured_env()
    )
    assert out.returncode == 0, out.stderr
    return set(out.stdout.rsplit("loaded=", 1)[1].strip().split(","))


def test_version_and_help_load_no_verb():
    """The command table is lazy: `--version` and `--help` import no verb module, and so
    none of the library under them."""
    for argv in (["--version"], ["--help"]):
        loaded = _modules_loaded(argv)
        ours = {m for m in loaded if m.startswith("gitkb.") and m != "gitkb.cli"}
        assert ours <= {"gitkb.error_handler", "gitkb.errors", "gitkb.util", "gitkb.util.log"}, (
            argv,
            sorted(ours),
        )


def test_git_kb_is_the_entry_point_of_the_cli():
    """`git-kb` is a standard ``[project.scripts]`` entry point: the script an installer
    writes calls ``gitkb.cli.main``."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["git-kb"].partition(":")
    assert getattr(importlib.import_module(module), name) is main


READ_VERBS_NEVER_LOAD = ("gitkb.gates", "gitkb.schema", "gitkb.vcs.repository",
                         "gitkb.trace.techniques")  # fmt: skip


def test_read_verbs_load_neither_dulwich_nor_jsonschema(tmp_path):
    """query, resolve and show on a store whose index cache holds main: no VCS layer's
    dulwich side, no jsonschema, no schema, no gates, no technique vocabulary (only
    indexing derives a record's technique)."""

    from gitkb.store import Store

    store = Store.init(tmp_path / "kb.git", bare=True)
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))
    shown = store.view().ids()[0]
    at = ["--store", str(store.location)]
    for argv in (
        ["query", *at, "--arch", "sm_90", "softmax", "--json"],
        ["query", *at, "--family", "softmax", "--dsl", "triton", "--brief"],
        ["resolve", *at, "--kernel", "softmax", "--arch", "hopper"],
    ):
        loaded = _modules_loaded(argv)
        heavy = {m for m in loaded if m.split(".")[0] in ("dulwich", "jsonschema")}
        heavy |= {m for m in READ_VERBS_NEVER_LOAD if m in loaded}
        assert not heavy, (argv, sorted(heavy))
    # show asks main's tree whether it holds the row's blob before serving it (a forged
    # cache row is never served): the object files answer (gitkb.vcs.tree_ids), no dulwich.
    loaded = _modules_loaded(["show", *at, shown])
    heavy = {m for m in loaded if m.split(".")[0] in ("dulwich", "jsonschema")}
    heavy |= {m for m in READ_VERBS_NEVER_LOAD if m in loaded}
    assert not heavy, sorted(heavy)


def test_internal_errors_are_one_line(tmp_path):
    result = kb("validate", str(tmp_path / "missing"))
    assert result.returncode != 0
    assert b"Traceback" not in result.stderr
