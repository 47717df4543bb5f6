"""The quick suite's budget: a test not marked ``slow`` runs in about a second or less
(CONTRIBUTING.md, "The quick loop"). tests/conftest.py times each test's call and fails
one that is over.

The budget is CPU time, the test's own and that of the processes it started and waited for:
wall time on a shared or loaded machine (two pytest-xdist workers on two cores, other jobs
beside them) varies threefold from one run to the next, CPU time hardly at all. A second
bound, on wall time, catches a test that waits rather than works."""

from __future__ import annotations

import os
import resource
import sys

ENV = "GITKB_QUICK_TEST_SECONDS"
# The rule is a second; the check allows half again for a slower machine, so that it fails
# only a test that is over the rule on any machine (the heaviest quick test measured 0.86 s).
CPU_SECONDS = 1.5
WAIT_SECONDS = 10.0  # wall time: a quick test measured at most 4.7 s on a loaded machine


def cpu_budget() -> float:
    """``GITKB_QUICK_TEST_SECONDS`` (``inf``: no check), else ``CPU_SECONDS``."""
    text = os.environ.get(ENV, "").strip()
    return float(text) if text else CPU_SECONDS


def cpu_seconds() -> float:
    """User and system time of this process and of its children that were waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def traced() -> bool:
    """Whether coverage (or a debugger) traces this run: a traced test runs at the tracer's
    speed, which says nothing about the test's own."""
    if sys.gettrace() is not None or os.environ.get("COVERAGE_PROCESS_CONFIG"):
        return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12: coverage's sysmon core
    return monitoring is not None and monitoring.get_tool(monitoring.COVERAGE_ID) is not None


def over_budget(cpu: float, wall: float, budget: float) -> str | None:
    """Why a quick test that took ``cpu`` and ``wall`` seconds is too slow, or None."""
    if cpu > budget:
        spent = f"{cpu:.2f} s of CPU (its own and its subprocesses'), over {budget:g} s"
    elif wall > WAIT_SECONDS:
        spent = f"{wall:.1f} s, over {WAIT_SECONDS:g} s of waiting"
    else:
        return None
    return f"this test took {spent}: mark it @pytest.mark.slow, or make it quicker ({ENV})"
