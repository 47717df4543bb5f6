"""Bad input through the real CLI: one clear `gitkb: error:` line, exit 1 or 2, never an
internal error or a traceback, and a refused write leaves the store's refs and files as
they were."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, example_files, git, kb, lose_object
from helpers.templates import copy_of

from gitkb.testing.traces import legacy_trace

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

STRATEGY = next(p for p in example_files() if "/strategy/" in p.as_posix())
ANTI = next(p for p in example_files() if "/anti-strategy/" in p.as_posix())
RECORD_ID = STRATEGY.stem
BUNDLE = ROOT / "targets" / "cpu" / "examples" / "blocked_matmul"


def _state(repo: Path) -> str:
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=repo).stdout
    return refs + git("status", "--porcelain", cwd=repo).stdout


def _refused(done, code: int = 1) -> str:
    err = done.stderr.decode(errors="replace")
    assert "internal error" not in err and "Traceback" not in err, err
    assert done.returncode == code, err
    return err


def _fill(folder: Path) -> None:
    """``folder/store``: a store made by `git kb init`, the example strategy admitted."""
    path = folder / "store"
    assert kb("init", str(path)).returncode == 0
    assert kb("admit", str(STRATEGY), "--store", str(path)).returncode == 0


@pytest.fixture
def filled(tmp_path, tmp_path_factory):
    """A store holding the example strategy record, changed by C git as a test says (a copy
    of one made once per test process)."""
    return copy_of("filled", _fill, tmp_path_factory, tmp_path) / "store"


def _commit_on_main(store: Path, path: str, data: bytes) -> None:
    target = store / path
    target.write_bytes(data)
    git("add", "-A", cwd=store)
    git("commit", "-q", "--no-verify", "-m", "hand edit", cwd=store)


def _record_path(store: Path) -> str:
    return next(
        p for p in git("ls-files", "records", cwd=store).stdout.split() if "/strategy/" in p
    )


def _with(**fields) -> bytes:
    record = json.loads(STRATEGY.read_bytes())
    record.update(fields)
    return json.dumps(record).encode()


def _damage_cache(store: Path, how: str) -> None:
    """Break the store's index cache (under the git directory) the way ``how`` says."""
    import sqlite3

    cache = store / ".git" / "gitkb-cache" / "index.sqlite3"
    assert kb("list", "--store", str(store)).returncode == 0  # the cache exists
    if how == "deleted":
        cache.unlink()
    elif how == "truncated":
        with sqlite3.connect(cache) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        data = cache.read_bytes()
        cache.write_bytes(data[: len(data) // 3])
    elif how == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{cache}{suffix}").unlink(missing_ok=True)
        cache.write_bytes(b"not a database at all\n" * 100)
    elif how == "forged":
        with sqlite3.connect(cache) as db:
            db.execute("UPDATE records SET blob = '0' || substr(blob, 2)")
            db.execute("DELETE FROM entries")


@pytest.mark.parametrize("how", ["deleted", "truncated", "garbage", "forged"])
@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["show", RECORD_ID],
        ["report", "--out", "{tmp}/site"],
        ["match", str(STRATEGY)],
        ["mine", "{tmp}/trace", "--dry-run"],
        ["recon", "{tmp}/trace"],
        ["resolve", "--kernel", "softmax", "--arch", "hopper"],
        ["validate", "--full"],
    ],
    ids=lambda a: a[0],
)
def test_a_damaged_index_cache_is_rebuilt_never_trusted(filled, tmp_path, args, how):
    _damage_cache(filled, how)
    if "{tmp}/trace" in args:
        legacy_trace(tmp_path / "trace")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if args[0] == "validate":
        argv.append(str(filled))
    done = kb(*argv, "--store", str(filled)) if args[0] != "validate" else kb(*argv)
    _refused(done, 0)
    listed = kb("list", "--store", str(filled)).stdout.decode()
    assert RECORD_ID in listed, "the rebuilt cache knows the record again"


@pytest.mark.parametrize(
    "fields",
    [
        {"worth": "w", "evidence": 5, "retrieval": {"scope": "s"}},
        {"worth": None, "payload": [1]},
        {"worth": {"rank": "x", "track": "t", "gain": [1]}, "evidence": {"raw": []}},
    ],
    ids=["worth-string", "worth-null", "worth-parts-wrong"],
)
@pytest.mark.parametrize(
    "args, code",
    [
        (["retract", RECORD_ID, "--reason", "r"], 1),
        (["admit", "--action", "confirm", "--target", RECORD_ID, str(ANTI)], 1),
        (["match", str(STRATEGY)], 0),
        (["report", "--out", "{tmp}/site"], 0),
        (["mine", "{tmp}/trace", "--dry-run"], 0),
    ],
    ids=["retract", "confirm", "match", "report", "mine"],
)
def test_a_stored_record_with_wrong_typed_fields(filled, tmp_path, fields, args, code):
    _commit_on_main(filled, _record_path(filled), _with(**fields))
    if "{tmp}/trace" in args:
        legacy_trace(tmp_path / "trace")
    before = _state(filled)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    err = _refused(kb(*argv, "--store", str(filled)), code)
    if code:
        assert "not an object" in err and RECORD_ID in err
        assert _state(filled) == before


def test_a_record_whose_object_is_lost_is_named_never_denied(filled, tmp_path):
    """A record file whose object cannot be read: `show` names the file and why, rather
    than saying there is no such record; `query` notes the object and serves the rest;
    `validate` reports the file as a finding and judges the rest; an export leaves it out
    and says so."""
    assert kb("admit", str(ANTI), "--store", str(filled)).returncode == 0
    path = _record_path(filled)
    lose_object(filled, git("rev-parse", f"main:{path}", cwd=filled).stdout.strip())
    done = kb("query", "--store", str(filled), "--json")  # the cache is rebuilt here
    assert "cannot be read from" in _refused(done, 0)
    served = [r["id"] for r in json.loads(done.stdout)["records"]]
    assert ANTI.stem in served and RECORD_ID not in served
    err = _refused(kb("show", RECORD_ID, "--store", str(filled)), 1)
    assert err.count("gitkb: error:") == 1 and f"{path} in " in err
    assert "holds no readable record" in err and "cannot be read" in err
    done = kb("validate", str(filled))  # the file is a finding; every gate still runs
    _refused(done, 1)
    out = done.stdout.decode()
    assert f"{RECORD_ID}: schema: its object " in out and "cannot be read" in out
    assert re.search(r"^1 of \d+ gates failed$", out, re.MULTILINE), out
    done = kb("export", "gpu-wiki", "--store", str(filled), str(tmp_path / "out"))
    assert "not exported" in _refused(done, 0)
    written = {p.name for p in (tmp_path / "out").rglob("*.json")}
    assert f"{ANTI.stem}.json" in written and f"{RECORD_ID}.json" not in written


@pytest.mark.parametrize(
    "args",
    [
        ["query", b"\xff\xfe softmax"],
        ["query", "--arch", b"sm_90\xff", "softmax"],
        ["show", b"\xffnvidia"],
        ["feedback", b"\xff", "--outcome", "helped"],
        ["log", b"\xff"],
    ],
    ids=["query-terms", "query-arch", "show", "feedback", "log"],
)
def test_an_argument_that_is_not_utf8_text_is_a_usage_error(filled, args):
    """A non-UTF-8 argument where a verb wants text: exit 2 and one line naming it (click
    hands it on as a string of surrogate escapes, which SQL and JSON cannot hold)."""
    before = _state(filled)
    err = _refused(kb(*args, "--store", str(filled)), 2)
    assert "is not UTF-8 text" in err and "Error: Invalid value for" in err
    assert _state(filled) == before


def test_a_path_that_is_not_utf8_is_still_a_path(filled, tmp_path):
    named = tmp_path / os.fsdecode(b"r\xff.json")
    named.write_bytes(ANTI.read_bytes())
    done = kb("admit", bytes(named), "--store", str(filled))
    _refused(done, 0)
    assert ANTI.stem in kb("list", "--store", str(filled)).stdout.decode()


def test_reindex_skips_a_record_whose_id_is_not_a_string(filled):
    assert kb("admit", str(ANTI), "--store", str(filled)).returncode == 0
    _commit_on_main(filled, _record_path(filled), _with(id=5))
    _refused(kb("reindex", "--store", str(filled)), 0)
    listed = kb("list", "--store", str(filled)).stdout.decode()
    assert ANTI.stem in listed and RECORD_ID not in listed


@pytest.mark.parametrize(
    "data, message",
    [
        (_with(retrieval="r"), "refused by the gates"),
        (_with(retrieval=[1]), "refused by the gates"),
        (_with(retrieval={"scope": "s"}), "refused by the gates"),
        (b"[" * 100_000, "nested too deeply"),
        (b"", "empty"),
        (b"null", "a record is a JSON object, got null"),
    ],
    ids=["retrieval-string", "retrieval-list", "scope-string", "deep", "empty", "null"],
)
@pytest.mark.parametrize("verb", ["admit", "match"])
def test_a_malformed_record_file_is_refused(filled, tmp_path, data, message, verb):
    if verb == "match" and message == "refused by the gates":
        message = '"status": "gate_error"'
    path = tmp_path / "in.json"
    path.write_bytes(data)
    before = _state(filled)
    done = kb(verb, str(path), "--store", str(filled))
    err = _refused(done)
    assert message in err + done.stdout.decode()
    assert _state(filled) == before


def test_empty_stdin_is_named_stdin(filled):
    err = _refused(kb("admit", "-", "--store", str(filled), input=b""))
    assert "gitkb: error: <stdin>: empty" in err


@pytest.mark.parametrize("data", [_with(type=[1]), b"[" * 100_000])
def test_validate_reports_a_bad_folder_record(tmp_path, data):
    folder = tmp_path / "staging" / "records" / "strategy"
    folder.mkdir(parents=True)
    (folder / "x.json").write_bytes(data)
    done = kb("validate", str(tmp_path / "staging"))
    _refused(done)
    assert b"FAIL" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["init", "{out}"],
        ["export", "gpu-wiki", "{out}", "--store", "{store}"],
        ["report", "--out", "{out}", "--store", "{store}"],
        [
            "resolve",
            "--kernel",
            "softmax",
            "--arch",
            "hopper",
            "--out",
            "{out}",
            "--store",
            "{store}",
        ],
        ["mine", "{trace}", "--stage-only", "{out}"],
        ["optimize", str(BUNDLE), "-o", "{out}", "--no-commit-winner"],
        ["demo", "{out}"],
    ],
    ids=lambda args: args[0],
)
def test_an_output_folder_below_a_file_is_refused(filled, tmp_path, args):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    if "{trace}" in args:
        legacy_trace(tmp_path / "trace")
    fill = {
        "{out}": str(blocker / "out"),
        "{store}": str(filled),
        "{trace}": str(tmp_path / "trace"),
    }
    argv = [fill.get(a, a) for a in args]
    before = _state(filled)
    err = _refused(kb(*argv, cwd=tmp_path))
    assert f"{blocker / 'out'}: cannot write there (Not a directory" in err
    assert _state(filled) == before


def test_init_refuses_a_multi_line_name_before_creating_anything(tmp_path):
    err = _refused(kb("init", "--name", "a\nb", str(tmp_path / "s")), 2)
    assert "store name 'a\\nb' must be one non-empty line" in err
    assert not (tmp_path / "s").exists()


def test_resolve_on_a_path_that_is_no_store_exits_1(tmp_path):
    err = _refused(kb("resolve", "--kernel", "softmax", "--store", str(tmp_path)))
    assert "is not a gitkb store" in err


@pytest.mark.parametrize(
    "line, message",
    [
        ("{zero} {a} refs/heads/main", "commit aaaa"),
        ("{a} {b} refs/heads/main", "is not in the repository"),
        ("{zero} {bad} refs/heads/main", "expected two 40-hex commit ids"),
    ],
)
def test_pre_receive_names_unknown_or_malformed_commits(filled, line, message):
    text = line.format(zero="0" * 40, a="a" * 40, b="b" * 40, bad="z" * 40) + "\n"
    git_dir = filled / ".git"
    done = kb(
        "hook", "pre-receive", cwd=git_dir, env={"GIT_DIR": str(git_dir)}, input=text.encode()
    )
    assert message in _refused(done)


def test_a_harness_that_fails_the_baseline_is_one_line(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    harness = bundle / "harness.py"
    harness.write_text(
        harness.read_text() + "\n\ndef verify(*args, **kwargs):\n    raise ValueError('boom')\n"
    )
    out = tmp_path / "out"
    done = kb("optimize", str(bundle), "-o", str(out), "--no-commit-winner", "--max-rounds", "1")
    err = _refused(done)
    lines = [line for line in err.splitlines() if not line.startswith("[gitkb]")]
    assert len(lines) == 1 and "verify raised ValueError: boom" in lines[0], err
    assert f"(details: {out / 'experiments' / 'baseline'})" in lines[0]


def test_a_negative_agent_timeout_is_a_usage_error(tmp_path):
    # optimize's usage errors exit 1: its 2 means "no winner"
    _refused(kb("optimize", str(BUNDLE), "--agent-timeout", "-1", cwd=tmp_path), 1)


# ------------------------------------------------------------- read-only stores


def _unprivileged() -> list[str]:
    """A command prefix under which file permissions hold even for root (a user namespace)."""
    probe = subprocess.run(["unshare", "-U", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("unshare -U is not available here")
    return ["unshare", "-U"]


def _kb_unprivileged(*args: str):
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [*_unprivileged(), sys.executable, "-m", "gitkb", *args]
    return subprocess.run(argv, capture_output=True, env=env, check=False)


@pytest.mark.parametrize(
    "locked, message",
    [
        (".", "cannot write to the store (Permission denied"),
        (".git/objects", "cannot write to the store (Permission denied"),
        (".git/refs", "refs/heads/main: cannot write the ref (Permission denied"),
    ],
)
@pytest.mark.parametrize(
    "args",
    [["admit", str(ANTI)], ["retract", RECORD_ID, "--reason", "r"]],
    ids=lambda args: args[0],
)
def test_a_read_only_store_refuses_writes_and_stays_as_it_was(filled, locked, message, args):
    before = _state(filled)
    subprocess.run(["chmod", "-R", "a-w", str(filled / locked)], check=True)
    if locked == ".git/refs":
        subprocess.run(["chmod", "a-w", str(filled / ".git")], check=True)
    try:
        done = _kb_unprivileged(*args, "--store", str(filled))
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(filled)], check=True)
    assert message in _refused(done)
    assert _state(filled) == before


def test_a_read_only_work_tree_says_main_moved_and_how_to_catch_up(filled):
    subprocess.run(["chmod", "-R", "a-w", str(filled / "records")], check=True)
    try:
        done = _kb_unprivileged("admit", str(ANTI), "--store", str(filled))
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(filled)], check=True)
    err = _refused(done)
    assert "the work tree could not follow (Permission denied" in err
    assert b"insert " + ANTI.stem.encode() in done.stdout  # the admission is reported
    git("checkout", "HEAD", "--", ".", cwd=filled)
    assert git("status", "--porcelain", cwd=filled).stdout == ""


def test_mine_refuses_an_unknown_dsl(tmp_path):
    result = kb("mine", str(tmp_path), "--dsl", "nope", "--dry-run")
    assert result.returncode == 2 and b"'nope' is not one of" in result.stderr


@pytest.mark.parametrize("floor", ["nan", "-1"])
def test_resolve_refuses_a_meaningless_floor(tmp_path, floor):
    from gitkb.store import Store

    Store.init(tmp_path / "kb")
    result = kb("resolve", "--kernel", "softmax", "--arch", "hopper", "--min-speedup", floor,
                "--store", str(tmp_path / "kb"))  # fmt: skip
    assert result.returncode == 2 and b"--min-speedup" in result.stderr


def test_reindex_names_the_records_it_cannot_index(tmp_path):
    from gitkb.store import Store

    store = Store.init(tmp_path / "kb")
    tip = store.tip
    broken = store.repo.write_commit(tip, {"records/strategy/x/broken.json": b"{oops"}, "raw\n")
    store.repo.update_ref("refs/heads/main", tip, broken)
    result = kb("reindex", "--store", str(tmp_path / "kb"))
    assert result.returncode == 0
    assert b"not indexed (run git kb validate): records/strategy/x/broken.json" in (
        result.stdout + result.stderr
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [(b"[store\nname = 1", b"not valid TOML"), (b"title = 'x'\n", b"has no [store] table")],
)
def test_a_broken_gitkb_toml_is_named(tmp_path, config, message):
    from gitkb.store import Store

    store = Store.init(tmp_path / "kb")
    tip = store.tip
    broken = store.repo.write_commit(tip, {"gitkb.toml": config}, "break the config\n")
    store.repo.update_ref("refs/heads/main", tip, broken)
    result = kb("list", "--store", str(tmp_path / "kb"))
    assert result.returncode == 1 and message in result.stderr
    assert b"Traceback" not in result.stderr and b"internal error" not in result.stderr


@pytest.mark.parametrize("cached", [True, False])
def test_a_truncated_pack_index_is_named_not_a_crash(filled, cached):
    """git's own ``.idx`` files cut short (a disk that filled, a bad copy): every reader
    says the repository is damaged in one line, as C git refuses it, with or without the
    index cache that let a query skip most reads."""
    git("repack", "-a", "-d", "-q", cwd=filled)
    shutil.rmtree(filled / ".git" / "gitkb-cache", ignore_errors=True)
    if cached:
        assert kb("query", "--store", str(filled), "softmax").returncode == 0
    for index in (filled / ".git" / "objects" / "pack").glob("*.idx"):
        index.write_bytes(index.read_bytes()[:100])
    assert git("log", "-1", cwd=filled, check=False).returncode != 0  # C git refuses it too
    for argv in (["list"], ["query", "softmax", "--json"], ["show", RECORD_ID]):
        err = _refused(kb(*argv, "--store", str(filled)))
        assert err.count("\n") == 1 and "is damaged: a pack index cannot be read" in err, argv
