"""Shared test fixtures: real repositories in tmp_path, a private git identity, a marker for
the processes a test starts. Helpers the tests import live in ``tests/helpers/``; a
fixture only one folder's tests use lives in that folder's conftest.py.

Tests by kind: ``unit/<package>/`` (one library module), ``cli/`` (the real command
line), ``server/`` (pushes, hooks, history rules), ``e2e/`` (whole runs). Each test gets
its folder's marker, so ``-m e2e`` selects a kind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Generator
from pathlib import Path

import pytest
from helpers import budget, live_with

TESTS = Path(__file__).parent
KINDS = ("unit", "cli", "server", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = item.path.relative_to(TESTS).parts[0]
        if kind in KINDS:
            item.add_marker(kind)


SPENT = pytest.StashKey[tuple[float, float]]()  # a test call's (CPU, wall) seconds


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    cpu, wall = budget.cpu_seconds(), time.perf_counter()
    try:
        return (yield)
    finally:
        item.stash[SPENT] = (budget.cpu_seconds() - cpu, time.perf_counter() - wall)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A passing test not marked slow fails when its call was over the quick suite's budget
    (helpers/budget.py); a traced run (coverage) is not judged."""
    report = yield
    if call.when == "call" and report.passed and item.get_closest_marker("slow") is None:
        spent = item.stash.get(SPENT, None)
        problem = spent and not budget.traced() and budget.over_budget(*spent, budget.cpu_budget())
        if problem:
            report.outcome = "failed"
            report.longrepr = problem
    return report


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory, monkeypatch):
    """C git and gitkb see a private HOME and a fixed identity, never the user's config."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.invalid")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    for name in (
        "GIT_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GITKB_STORE",
    ):
        monkeypatch.delenv(name, raising=False)
    subprocess.run(["git", "config", "--global", "init.defaultBranch", "main"], check=True)


@pytest.fixture
def store(tmp_path):
    from gitkb.store import Store

    return Store.init(tmp_path / "store")


@pytest.fixture
def bare_store(tmp_path):
    from gitkb.store import Store

    return Store.init(tmp_path / "store.git", bare=True)


@pytest.fixture
def marker():
    """A unique word for the command lines of the processes a test starts; whatever still
    carries it afterwards is killed, so a failing test leaves nothing behind."""
    tag = f"gitkb-test-{uuid.uuid4().hex}"
    yield tag
    for pid in live_with(tag):
        os.kill(pid, signal.SIGKILL)
