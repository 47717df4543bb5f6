"""The harness worker: one fresh subprocess per evaluation, contained whatever it does.

The harness runs in ``harness_child.py`` under the current interpreter through
``gitkb.util.runner`` (timeouts, SIGTERM then SIGKILL, every descendant killed), with
the target's environment applied. The request goes in on stdin; the response
comes back through a file, so a harness that prints, or leaves a child holding
a pipe open, cannot block the optimizer. The response is checked again here:
a verdict is only ever the boolean true, samples only finite positive numbers.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from gitkb.util import runner

CHILD = Path(__file__).with_name("harness_child.py")
KILL_GRACE_S = runner.KILL_GRACE_S
# What a harness prints is kept up to this much from the start, plus this much of the end.
LOG_HEAD_BYTES = 1 << 20
LOG_TAIL_BYTES = 64 << 10


@dataclass
class Evaluation:
    """What one harness run produced: the child's response, or why there is none."""

    response: dict | None
    outcome: runner.Outcome
    log: Path

    @property
    def timed_out(self) -> bool:
        return self.outcome.timed_out

    @property
    def returncode(self) -> int | None:
        return self.outcome.returncode

    @property
    def seconds(self) -> float:
        return self.outcome.seconds

    @property
    def error(self) -> str | None:
        if self.outcome.timed_out:
            return f"harness {self.outcome.describe()}"
        if self.response is None:
            tail = _tail(self.log)
            return f"harness process {self.outcome.describe()} and gave no response" + (
                f": {tail}" if tail else ""
            )
        return None


def _tail(path: Path, limit: int = 600) -> str:
    try:
        text = path.read_bytes()[-limit:].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return text.replace("\n", " | ")


def _is_sample(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def checked(response: object) -> dict | None:
    """The child's response if it has the shape the child writes, else None. A case that
    claims to pass must say so with the boolean true and carry only finite positive samples;
    one that does not is failed here, with the reason."""
    if not isinstance(response, dict) or not isinstance(response.get("build"), dict):
        return None
    build = response["build"]
    if build.get("success") is not True:
        build["success"] = False
    if not isinstance(build.get("diagnostics"), list):
        build["diagnostics"] = []
    cases = response.get("cases")
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        return None
    for case in cases:
        if not isinstance(case.get("diagnostics"), list):
            case["diagnostics"] = []
        samples = case.get("samples_us")
        if case.get("passed") is True and not (
            isinstance(samples, list) and samples and all(_is_sample(s) for s in samples)
        ):
            case["diagnostics"].append("response carries no valid timing samples")
            case["passed"] = False
        elif case.get("passed") is not True:
            case["passed"] = False
    return response


def run_harness(
    harness: Path,
    source: str,
    target: dict,
    cases: list[dict],
    repetitions: int,
    workdir: Path,
    timeout_s: float,
    environment: dict[str, str] | None = None,
    profile: dict | None = None,
) -> Evaluation:
    """Evaluate ``source`` once: build, then verify/benchmark/profile each case."""
    workdir.mkdir(parents=True, exist_ok=True)
    response_path = workdir / "response.json"
    response_path.unlink(missing_ok=True)
    request = {
        "harness": str(Path(harness).resolve()),
        "source": source,
        "target": target,
        "cases": cases,
        "repetitions": repetitions,
        "profile": profile,
        "response": str(response_path.resolve()),
    }
    request_path = workdir / "request.json"
    request_path.write_text(json.dumps(request), encoding="utf-8")
    log_path = workdir / "harness.log"
    env = dict(os.environ, **(environment or {}))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    outcome = runner.run(
        [sys.executable, str(CHILD)],
        timeout_s=timeout_s,
        cwd=workdir,
        env=env,
        stdin=request_path,
        output=log_path,
        output_cap=runner.OutputCap(LOG_HEAD_BYTES, LOG_TAIL_BYTES, "harness output"),
        grace_s=KILL_GRACE_S,
    )
    response = None
    if not outcome.timed_out and response_path.exists():
        try:
            response = checked(json.loads(response_path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            response = None
    return Evaluation(response, outcome, log_path)
