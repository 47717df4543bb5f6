"""`git kb check BASE..HEAD`: the server's verdict on a range, on real repositories, with
the real CLI; a refusal reads as the pre-receive hook's own, pushed for real."""

from __future__ import annotations

import json

import pytest
from helpers import git, kb
from helpers.pushes import forge, hooked_server_and_clone, push, record_edits
from helpers.signing import make_key, needs_ssh_keygen, public, sign_with

from gitkb import record as rec
from gitkb.store import Store
from gitkb.store import access as store_access
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # each test runs the CLI and builds a store: seconds


def insert(store: Store, record: dict) -> str:
    """Commit ``record`` onto main as an insert, with no gate in the way."""
    return forge(
        store,
        record_edits({rec.path_for(record): record}),
        f"kb insert {record['id']}",
        [("KB-Action", "insert"), ("KB-Record", record["id"])],
    )


def bad_record(n: int) -> dict:
    record = synthetic.strategy(n)
    record["level"] = "kernel"
    return record


def check(store: Store, revisions: str, *extra: str, env: dict | None = None):
    return kb("check", revisions, *extra, "--store", str(store.location), env=env)


def test_a_clean_range_exits_0(store):
    base = store.tip
    store.admit(rec.dumps(synthetic.strategy(1)), "insert")
    done = check(store, f"{base}..main")
    assert done.returncode == 0, done.stderr.decode()
    assert b"clean" in done.stdout


def test_a_bad_record_is_refused_with_the_hook_s_own_reason(tmp_path, monkeypatch):
    _, work = hooked_server_and_clone(tmp_path, monkeypatch)
    base = work.tip
    work.admit(rec.dumps(synthetic.strategy(2)), "insert")
    commit = insert(work, bad_record(3))

    checked = check(work, "origin/main..main")
    pushed = push(work)
    assert checked.returncode == 1 and pushed.returncode != 0
    hook_lines = [
        line.removeprefix("remote: ").strip()
        for line in pushed.stderr.splitlines()
        if line.startswith("remote: gitkb: ")
    ]
    check_lines = [
        line for line in checked.stdout.decode().splitlines() if line.startswith("gitkb")
    ]
    assert hook_lines and hook_lines == check_lines, (hook_lines, check_lines)
    assert f"refs/heads/main {commit}: " in hook_lines[0] and ": schema: " in hook_lines[0]
    assert check(work, f"{base}..main~1").returncode == 0, "the good admission alone is clean"


def cite_absent_trace(store: Store, n: int) -> tuple[dict, str]:
    """A record citing trace ``t<n>`` at a commit the store holds under no trace ref."""
    trace = store.repo.write_commit(None, {"kernel.py": b"v0\n"}, "v0\n")
    record = synthetic.strategy(n)
    record["evidence"]["raw"].update(source_repo=f"t{n}", git_commit=trace)
    insert(store, record)
    return record, trace


def test_a_missing_trace_ref_exits_2_naming_it(store):
    base = store.tip
    record, trace = cite_absent_trace(store, 4)
    done = check(store, f"{base}..main")
    out = done.stdout.decode()
    assert done.returncode == 2, out + done.stderr.decode()
    assert f"missing trace ref refs/kb/traces/t4 (cited by {record['id']}, at {trace})" in out

    answer = json.loads(check(store, f"{base}..main", "--format", "json").stdout)
    assert answer["exit"] == 2 and answer["outcome"] == "missing traces"
    [missing] = answer["missing"]
    assert missing["ref"] == "refs/kb/traces/t4" and missing["what"] == "ref"
    assert missing["path"] == rec.path_for(record)

    # With the ref fetched, the trace gates judge the trace itself (a bare one here).
    store.repo.update_ref("refs/kb/traces/t4", None, trace)
    done = check(store, f"{base}..main")
    assert done.returncode == 1 and b"missing trace ref" not in done.stdout, done.stdout


def test_a_refusal_beside_a_missing_trace_still_exits_1(store):
    base = store.tip
    cite_absent_trace(store, 5)
    insert(store, bad_record(6))
    done = check(store, f"{base}..main")
    assert done.returncode == 1 and b"missing trace ref refs/kb/traces/t5" in done.stdout


def test_a_missing_trace_object_is_named(store):
    base = store.tip
    trace = store.repo.write_commit(None, {"kernel.py": b"v0\n"}, "v0\n")
    store.repo.update_ref("refs/kb/traces/t7", None, trace)
    record = synthetic.strategy(7)
    record["evidence"]["raw"].update(source_repo="t7", git_commit="0" * 40)
    insert(store, record)
    done = check(store, f"{base}..main")
    assert done.returncode == 2
    assert f"missing trace object {'0' * 40} of refs/kb/traces/t7" in done.stdout.decode()


def access_lines(done) -> list[str]:
    """The access findings of a check's or a ``validate --history``'s output, from the rule
    on (each tool puts its own prefix before it)."""
    text = done.stdout.decode()
    return [line[line.index(": access: ") :] for line in text.splitlines() if ": access: " in line]


@needs_ssh_keygen
def test_turning_access_on_answers_to_the_admins_it_names_as_in_validate(tmp_path):
    """No server anchor (a forge, where the protected base branch is the anchor): check
    judges the commit that turns access on as ``validate --history`` does."""
    keys = tmp_path / "keys"
    alice, mallory = make_key(keys, "alice"), make_key(keys, "mallory")
    store = Store.init(tmp_path / "store")
    base = store.tip
    sign_with(alice, "-C", str(store.location))
    store_access.init(store, "alice", store_access.key_of(public(alice), "alice"))
    done = check(store, f"{base}..main")
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert kb("validate", "--history", str(store.location)).returncode == 0

    # The same commit signed by a key it does not name (made with C git: `access init`
    # refuses to sign with another key than the admin's): refused by both, in the same words.
    sign_with(mallory, "-C", str(store.location))
    tree = git("rev-parse", "main^{tree}", cwd=store.location).stdout.strip()
    message = git("log", "-1", "--format=%B", "main", cwd=store.location).stdout
    forged = git("commit-tree", "-S", "-p", base, "-F", "-", tree,
                 cwd=store.location, input=message).stdout.strip()  # fmt: skip
    git("update-ref", "refs/heads/main", forged, cwd=store.location)
    checked = check(store, f"{base}..main")
    replayed = kb("validate", "--history", str(store.location))
    assert checked.returncode == 1 and replayed.returncode == 1
    [line] = access_lines(checked)
    assert line.startswith(": access: unknown key: turning access on needs an admin's"), line
    assert line.endswith("judged by the access files it adds (no server anchor))"), line
    assert access_lines(replayed) == [line]


# --------------------------------------------------------------------------- formats


@pytest.fixture
def refused_range(store):
    """A range with one bad record and one record citing a trace the store lacks."""
    base = store.tip
    bad = bad_record(8)
    insert(store, bad)
    cited, _ = cite_absent_trace(store, 9)
    return store, f"{base}..main", rec.path_for(bad), rec.path_for(cited)


def test_github_annotations_and_the_job_summary(refused_range, tmp_path):
    store, revisions, bad_path, cited_path = refused_range
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    done = check(store, revisions, "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1
    lines = done.stdout.decode().splitlines()
    assert all(line.startswith("::error ") for line in lines), lines
    files = [line.split(",title=")[0].removeprefix("::error file=") for line in lines]
    assert bad_path.replace(":", "%3A") in files and cited_path in files
    schema = next(line for line in lines if bad_path in line)
    assert "title=gitkb schema::refs/heads/main " in schema
    # Properties escape , and : (a file name may hold neither); the message keeps them.
    assert "level: 'kernel' is not one of" in schema
    text = summary.read_text()
    assert text.startswith("earlier step\n## gitkb check: refused"), text
    assert f"`{bad_path}`" in text and "| schema |" in text


def test_workflow_command_escaping():
    from gitkb.server.check_formats import _escape_data, _escape_property

    assert _escape_data("100% a\r\nb") == "100%25 a%0D%0Ab"
    assert _escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_gitlab_code_quality_report(refused_range):
    store, revisions, bad_path, cited_path = refused_range
    done = check(store, revisions, "--format", "gitlab")
    assert done.returncode == 1
    issues = json.loads(done.stdout)
    assert isinstance(issues, list) and len(issues) >= 2
    for issue in issues:
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(issue)
        assert isinstance(issue["location"]["path"], str) and issue["location"]["path"]
        assert issue["location"]["lines"]["begin"] == 1
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    paths = {i["location"]["path"] for i in issues}
    assert {bad_path, cited_path} <= paths


def test_sarif_2_1_0(refused_range):
    store, revisions, bad_path, _ = refused_range
    done = check(store, revisions, "--format", "sarif")
    assert done.returncode == 1
    log = json.loads(done.stdout)
    # The required structure of SARIF 2.1.0 (its schema is not shipped for offline use).
    assert log["version"] == "2.1.0" and isinstance(log["runs"], list)
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gitkb" and isinstance(driver["rules"], list)
    rule_ids = [r["id"] for r in driver["rules"]]
    assert run["results"]
    for result in run["results"]:
        assert isinstance(result["message"]["text"], str) and result["message"]["text"]
        assert result["level"] in {"none", "note", "warning", "error"}
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        for location in result.get("locations", []):
            assert location["physicalLocation"]["artifactLocation"]["uri"]
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in run["results"]
        for loc in r.get("locations", [])
    }
    assert bad_path in uris


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("revisions", "says"),
    [
        ("main", "is not a range: give BASE..HEAD"),
        ("main...main", "is not a range"),
        ("..main", "is not a range"),
        ("nosuch..main", "'nosuch' names no commit"),
        ("main..--output=x", "'--output=x' names no commit"),
    ],
)
def test_bad_ranges_are_one_line(store, revisions, says):
    done = check(store, revisions)
    err = done.stderr.decode()
    assert done.returncode == 1 and says in err and len(err.splitlines()) == 1, err
    assert not done.stdout


def test_a_repository_that_is_no_store_is_one_line(tmp_path):
    git("init", "-q", str(tmp_path / "plain"))
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=tmp_path / "plain")
    done = kb("check", "main..main", "--store", str(tmp_path / "plain"))
    err = done.stderr.decode()
    assert done.returncode == 1 and "is not a gitkb store" in err and len(err.splitlines()) == 1
    assert "Traceback" not in err


def test_a_base_without_the_store_is_one_line(store):
    first = git("rev-list", "--max-parents=0", "main", cwd=store.location).stdout.strip()
    empty = store.repo.write_commit(None, {"note.txt": b"x\n"}, "unrelated\n")
    done = check(store, f"{empty}..{first}")
    err = done.stderr.decode()
    assert done.returncode == 1 and "holds no store (no gitkb.toml)" in err, err


def test_github_format_of_a_clean_range_and_an_unwritable_summary(store, tmp_path):
    base = store.tip
    store.admit(rec.dumps(synthetic.strategy(10)), "insert")
    done = check(store, f"{base}..main", "--format", "github")
    assert done.returncode == 0 and done.stdout.startswith(b"::notice title=gitkb check::")
    nowhere = tmp_path / "no-such-folder" / "summary.md"
    done = check(
        store, f"{base}..main", "--format", "github", env={"GITHUB_STEP_SUMMARY": str(nowhere)}
    )
    err = done.stderr.decode()
    assert done.returncode == 1 and "cannot write there" in err and len(err.splitlines()) == 1


def test_a_fork_s_mined_records_wait_on_its_trace_refs_then_pass(tmp_path):
    """The pull-request flow: the records come with the fork's main, their traces under the
    fork's refs/kb/traces/*; the check names the refs until they are fetched."""
    from gitkb.mine.pipeline import mine
    from gitkb.testing.trace import write_trace

    Store.init(tmp_path / "base.git", bare=True)
    git("clone", "-q", str(tmp_path / "base.git"), str(tmp_path / "fork"))
    fork = Store.open(tmp_path / "fork")
    mine(write_trace(tmp_path / "trace").path, store=fork, label="softmax-run")
    labels = sorted(fork.repo.refs("refs/kb/traces/"))
    assert labels == ["refs/kb/traces/softmax-run"]

    git("clone", "-q", str(tmp_path / "base.git"), str(tmp_path / "pr"))
    pr = Store.open(tmp_path / "pr")
    git("fetch", "-q", str(tmp_path / "fork"), "main:refs/heads/pull", cwd=pr.location)
    waiting = check(pr, "origin/main..pull")
    assert waiting.returncode == 2, waiting.stdout.decode()
    assert b"missing trace ref refs/kb/traces/softmax-run" in waiting.stdout

    git("fetch", "-q", str(tmp_path / "fork"), "refs/kb/traces/*:refs/kb/traces/*", cwd=pr.location)
    done = check(pr, "origin/main..pull")
    assert done.returncode == 0, done.stdout.decode()


def test_a_head_that_leaves_base_behind_is_refused_at_no_file(store):
    first = store.tip
    store.admit(rec.dumps(synthetic.strategy(11)), "insert")
    ahead = store.tip
    git("update-ref", "refs/heads/main", first, cwd=store.location)
    store.admit(rec.dumps(synthetic.strategy(12)), "insert")
    done = check(store, f"{ahead}..main", "--format", "gitlab")
    assert done.returncode == 1
    [issue] = json.loads(done.stdout)
    assert "not a fast-forward" in issue["description"]
    assert issue["location"]["path"] == "gitkb.toml"
