"""Local hooks through the pre-commit framework itself, the commit-msg check, and
`git kb hooks install` (local and server layouts)."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, git, kb, put_git_kb_on_path

from gitkb import record as rec
from gitkb.hooks.install import server_shim
from gitkb.hooks.local import commit_msg
from gitkb.store import Store
from gitkb.testing import synthetic
from gitkb.util.resources import data_dir

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


def write_record(work: Path, record: dict) -> str:
    path = rec.path_for(record)
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_bytes(rec.dumps(record))
    return path


def head(work: Path) -> str:
    return git("rev-parse", "HEAD", cwd=work).stdout.strip()


@pytest.fixture
def hooked_store(tmp_path, monkeypatch):
    """A store made by `git kb init` with its hooks installed by `git kb hooks install`."""
    put_git_kb_on_path(tmp_path, monkeypatch)
    Store.init(tmp_path / "kb")
    done = kb("hooks", "install", str(tmp_path / "kb"))
    assert done.returncode == 0, done.stderr.decode()
    hooks = tmp_path / "kb" / ".git" / "hooks"
    assert (hooks / "pre-commit").is_file() and (hooks / "commit-msg").is_file()
    return tmp_path / "kb"


def test_framework_commits_a_good_record(hooked_store):
    path = write_record(hooked_store, synthetic.strategy(1))
    git("add", path, cwd=hooked_store)
    done = git("commit", "-m", "a good record", cwd=hooked_store, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gitkb record gates" in done.stdout + done.stderr
    assert git("log", "-1", "--format=%s", cwd=hooked_store).stdout.strip() == "a good record"


@pytest.mark.parametrize(
    ("defect", "gate", "what"),
    [
        ("absolute-path", "anonymization", "absolute path '/home/alice'"),
        ("schema", "schema", "'kernel' is not one of"),
    ],
)
def test_framework_refuses_a_bad_record_with_the_gates_message(hooked_store, defect, gate, what):
    record = synthetic.strategy(2)
    if defect == "absolute-path":
        record["payload"]["mechanism"] += " The code is in /home/alice/kernels/softmax.py."
    else:
        record["level"] = "kernel"
    before = head(hooked_store)
    path = write_record(hooked_store, record)
    git("add", path, cwd=hooked_store)
    done = git("commit", "-m", "a bad record", cwd=hooked_store, check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert f"gitkb: {record['id']}: {gate}: " in output and what in output, output
    assert head(hooked_store) == before


def test_framework_checks_admission_messages(hooked_store):
    record = synthetic.strategy(3)
    path = write_record(hooked_store, record)
    git("add", path, cwd=hooked_store)
    forged = f"kb insert {record['id']}\n\nKB-Action: insert\nKB-Record: someone.else.a.b.c\n"
    done = git("commit", "-F", "-", cwd=hooked_store, check=False, input=forged)
    assert done.returncode != 0
    assert "commit-msg: KB-Record is someone.else.a.b.c" in done.stdout + done.stderr
    honest = f"kb insert {record['id']}\n\nKB-Action: insert\nKB-Record: {record['id']}\n"
    done = git("commit", "-F", "-", cwd=hooked_store, check=False, input=honest)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("message", "problems"),
    [
        ("fix a typo in the README\n", []),
        ("kb insert a.b.c.d.e\n\nKB-Action: insert\nKB-Record: a.b.c.d.e\n", []),
        ("kb init mystore\n\nA new store.\n\nKB-Action: init\nKB-Store-Format: gitkb-1\n", []),
        (
            "kb insert a.b.c.d.e\n\nKB-Action: insert\nKB-Record: a.b.c.d.e\n"
            "# Please enter the commit message\n"
            "# ------------------------ >8 ------------------------\n"
            "diff --git a/x b/x\n",
            [],
        ),
        ("kb insert a.b.c.d.e\n", ["needs a final trailer block"]),
        ("kb insert a.b.c.d.e\n\nKB-Action: insert\nnot a trailer\n", ["needs a final trailer"]),
        (
            "kb confirm a.b.c.d.e\n\nKB-Action: insert\nKB-Record: a.b.c.d.e\n",
            ["KB-Action is insert"],
        ),
        ("kb insert a.b.c.d.e\n\nKB-Action: insert\n", ["KB-Record is nothing"]),
    ],
)
def test_commit_msg(tmp_path, message, problems):
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message)
    found = commit_msg(str(path))
    assert len(found) == len(problems), found
    for line, expected in zip(found, problems, strict=True):
        assert line.startswith("a.b.c.d.e: commit-msg: ") and expected in line


def test_shipped_hook_manifest_and_store_config_are_valid():
    def validate(kind: str, path: Path):
        done = subprocess.run(
            [sys.executable, "-m", "pre_commit", kind, str(path)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr

    validate("validate-manifest", ROOT / ".pre-commit-hooks.yaml")
    validate("validate-config", data_dir("templates") / "store" / "pre-commit-config.yaml")


# --------------------------------------------------------------------------- install


def test_install_server_hook_into_a_bare_repository(bare_store):
    done = kb("hooks", "install", "--server", str(bare_store.location))
    assert done.returncode == 0, done.stderr.decode()
    hook = bare_store.location / "hooks" / "pre-receive"
    assert hook.read_bytes() == server_shim(sys.executable)
    assert f"INSTALL_PYTHON={sys.executable}".encode() in hook.read_bytes()
    assert hook.stat().st_mode & stat.S_IXUSR
    again = kb("hooks", "install", "--server", str(bare_store.location))
    assert again.returncode == 0, "reinstalling the same hook is fine"


def test_server_hook_finds_gitkb_through_the_interpreter_that_installed_it(
    bare_store, tmp_path, monkeypatch
):
    """Installed from a virtualenv, the hook runs gitkb with that interpreter even when the
    server's PATH has neither git-kb nor a python3 that can import gitkb."""
    assert kb("hooks", "install", "--server", str(bare_store.location)).returncode == 0
    git_dir = str(Path(shutil.which("git")).parent)
    monkeypatch.setenv("PATH", git_dir)  # no git-kb here; its python3 (if any) lacks gitkb
    monkeypatch.delenv("GITKB_PYTHON", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    work = tmp_path / "work"
    git("clone", "-q", str(bare_store.location), str(work))
    record = synthetic.strategy(3)
    Store.open(work).admit(rec.dumps(record))
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode == 0, done.stderr
    bad = synthetic.strategy(4)
    bad["level"] = "kernel"
    path = write_record(work, bad)
    git("add", path, cwd=work)
    git("commit", "-qm", f"kb insert {bad['id']}", "-m",
        f"KB-Action: insert\nKB-Record: {bad['id']}", "--no-verify", cwd=work)  # fmt: skip
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0 and f"{bad['id']}: schema" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("flag", "where"),
    [("--gitea", "hooks/pre-receive.d/gitkb"), ("--gitlab", "custom_hooks/pre-receive")],
)
def test_install_server_hook_in_forge_layouts(bare_store, flag, where):
    done = kb("hooks", "install", "--server", flag, str(bare_store.location))
    assert done.returncode == 0, done.stderr.decode()
    hook = bare_store.location / where
    assert hook.stat().st_mode & stat.S_IXUSR
    assert b"git-kb hook pre-receive" in hook.read_bytes()


def test_install_server_refuses_a_non_bare_repository(store):
    done = kb("hooks", "install", "--server", str(store.location))
    assert done.returncode != 0
    err = done.stderr.decode().strip()
    assert err.startswith("gitkb: error: ") and "not a bare repository" in err
    assert len(err.splitlines()) == 1


def test_install_server_keeps_a_different_hook_unless_forced(bare_store):
    hook = bare_store.location / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 0\n")
    done = kb("hooks", "install", "--server", str(bare_store.location))
    assert done.returncode != 0 and b"--force" in done.stderr
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"
    done = kb("hooks", "install", "--server", "--force", str(bare_store.location))
    assert done.returncode == 0
    assert b"git-kb hook pre-receive" in hook.read_bytes()


def test_install_local_refuses_a_bare_repository(bare_store):
    done = kb("hooks", "install", str(bare_store.location))
    assert done.returncode != 0 and b"--server" in done.stderr
