"""A non-editable install works on its own: data files ship inside the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the wheel offline and install it into a fresh venv whose only view of the
    dependencies is this environment's site-packages (after the venv's own)."""
    pytest.importorskip("hatchling")
    work = tmp_path_factory.mktemp("install")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(work / "wheels"), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    wheel = next((work / "wheels").glob("gitkb-*.whl"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
         "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    # Only now let the venv see this environment's packages, for the dependencies: earlier,
    # pip would find the gitkb installed here and skip the wheel.
    site = next((venv / "lib").glob("python*/site-packages"))
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_outer_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return venv


def run(venv, *args, cwd):
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)


def test_wheel_runs_from_a_fresh_venv(installed, tmp_path):
    where = run(installed, "python", "-c", "import gitkb; print(gitkb.__file__)", cwd=tmp_path)
    assert str(installed) in where.stdout, where.stdout + where.stderr
    version = run(installed, "git", "kb", "--version", cwd=tmp_path)
    assert version.returncode == 0 and "git-kb" in version.stdout, version.stderr
    # the entry point's script, as pip writes it: the venv's interpreter, gitkb.cli's main
    script = (installed / "bin" / "git-kb").read_text()
    assert script.startswith(f"#!{installed}") and "from gitkb.cli import main" in script, script
    check = run(installed, "git-kb", "schema", "--check", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert run(installed, "git", "kb", "init", "kb", cwd=tmp_path).returncode == 0
    injections = run(installed, "git-kb", "validate", "--injection-tests", cwd=tmp_path)
    assert injections.returncode == 0, injections.stdout + injections.stderr
    assert run(installed, "python", "-m", "gitkb", "-h", cwd=tmp_path).returncode == 0
