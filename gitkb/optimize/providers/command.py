"""The command provider: any external agent CLI proposes the next candidate.

Per experiment the agent gets a fresh workspace holding ``candidate.py`` (the
current best) and ``prompt.md``; it edits ``candidate.py`` in place and writes
``candidate_metadata.json``. The command line (``--agent-command``) may use
``{prompt_file}``, ``{workspace}``, ``{candidate}``, ``{metadata}`` and
``{prompt}`` (the prompt text) and ``{model}`` (``--model``); the same values are in
the environment as ``GITKB_PROMPT_FILE``, ``GITKB_WORKSPACE``, ``GITKB_CANDIDATE``,
``GITKB_METADATA``, ``GITKB_MODEL``. The agent runs through ``gitkb.util.runner`` (its
timeout, and every process it starts dies with it); its own output goes to
``agent.log`` in the workspace, never to the optimizer's log. An executable that
is not there is refused when the provider is loaded, before the baseline runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

from gitkb.errors import GitkbError
from gitkb.optimize import knowledge, providers
from gitkb.util import runner

CANDIDATE = "candidate.py"
METADATA = "candidate_metadata.json"
PROMPT = "prompt.md"
_PLACEHOLDER = re.compile(r"\{(prompt_file|workspace|candidate|metadata|prompt|model)\}")


def _fixed(value: float | None, digits: int = 3) -> str:
    """A number in fixed point with ``digits`` decimals; "n/a" for None."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def build_prompt(context: providers.ProposalContext) -> str:
    """The brief for an agent: guidance, target, cases, numbers of the current best, exclusions.

    The kernel source is in candidate.py, not in the prompt.
    """
    target = context.target
    lines = [
        "# Optimize the kernel in candidate.py",
        "",
        "Edit candidate.py in place: keep every top-level function and class, keep it a",
        "complete source file, and make it faster on the cases below while staying correct.",
        f"Then write {METADATA} with the keys: {', '.join(providers.METADATA_FIELDS)}.",
        "",
        "## Target",
        f"- backend: {target.get('backend', '')}",
        f"- architecture: {target.get('architecture', '')}",
        f"- device: {target.get('device', '')}",
        "",
        "## Guidance",
        target.get("optimization_guidance") or "(none given)",
        "",
        f"## Current best ({context.best_id})",
        "| case | weight | protected | median us | p95 us | cv | speedup vs baseline |",
        "|---|---|---|---|---|---|---|",
    ]
    numbers = {c["case_id"]: c for c in context.best_cases}
    for case in context.cases:
        row = numbers.get(case["case_id"], {})
        lines.append(
            f"| {case['case_id']} | {case['weight']} | {case['protected']} | "
            f"{_fixed(row.get('median_us'))} | {_fixed(row.get('p95_us'))} | "
            f"{_fixed(row.get('cv'))} | {_fixed(row.get('speedup'), 4)} |"
        )
    if context.best_profile:
        compact = json.dumps(context.best_profile, sort_keys=True)[:2000]
        lines += ["", "## Profile of the current best (compact)", compact]
    if context.references is not None:
        lines += [
            "",
            "## What the knowledge base knows about this kernel",
            f"Measured prior work on this hardware, one page per record: {context.references}",
        ]
    if context.kb_context:
        lines += [
            "",
            "## Optimization knowledge (the knowledge base's documents, widest first)",
            context.kb_context,
        ]
    lines += knowledge.prompt_section(context.knowledge)
    if context.exclusions:
        lines += ["", "## Already tried and rejected (do not repeat)"]
        for item in context.exclusions:
            lines.append(
                f"- {item['id']}: hypothesis: {item['hypothesis'] or '-'}; "
                f"change: {item['change'] or '-'}; decision: {item['decision']}; "
                f"numbers: {item['numbers']}"
            )
    return "\n".join(lines) + "\n"


def read_metadata(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, str | list[str]] = {
        k: str(data[k]) for k in providers.METADATA_FIELDS if data.get(k) is not None
    }
    named = data.get("kb_records")
    if isinstance(named, list):
        out["kb_records"] = [str(i) for i in named]
    return out


class Provider(providers.Provider):
    name = "command"

    def __init__(self, options: providers.ProviderOptions, tunables: dict[str, list]) -> None:
        super().__init__(options, tunables)
        self._check_options()
        # Found now, from the caller's folder: the agent runs in its workspace.
        self.executable = require_executable(self.argv(Path("."), Path(PROMPT), "")[0], self.name)

    def _check_options(self) -> None:
        if not self.options.agent_command:
            raise GitkbError("the command provider needs --agent-command")
        try:
            if not shlex.split(self.options.agent_command):
                raise ValueError("it is empty")
        except ValueError as exc:
            raise GitkbError(f"--agent-command is not a command line: {exc}") from None

    def argv(self, workspace: Path, prompt_file: Path, prompt: str) -> list[str]:
        values = {
            "prompt_file": str(prompt_file),
            "workspace": str(workspace),
            "candidate": str(workspace / CANDIDATE),
            "metadata": str(workspace / METADATA),
            "prompt": prompt,
            "model": self.options.model or "",
        }
        return [
            _PLACEHOLDER.sub(lambda m: values[m.group(1)], part)
            for part in shlex.split(self.options.agent_command)
        ]

    def propose(self, context: providers.ProposalContext) -> providers.Candidate | None:
        workspace = context.workspace
        if workspace is None:  # the agent edits its candidate in a folder of its own
            return providers.Candidate(source=None, error="no workspace folder for the agent")
        workspace.mkdir(parents=True, exist_ok=True)
        candidate = workspace / CANDIDATE
        candidate.write_text(context.best_source, encoding="utf-8")
        (workspace / METADATA).unlink(missing_ok=True)
        prompt = build_prompt(context)
        prompt_file = workspace / PROMPT
        prompt_file.write_text(prompt, encoding="utf-8")
        env = dict(
            os.environ,
            GITKB_PROMPT_FILE=str(prompt_file),
            GITKB_WORKSPACE=str(workspace),
            GITKB_CANDIDATE=str(candidate),
            GITKB_METADATA=str(workspace / METADATA),
            GITKB_MODEL=self.options.model or "",
        )
        argv = [self.executable, *self.argv(workspace, prompt_file, prompt)[1:]]
        error = self._run(argv, workspace, env)
        if error:
            return providers.Candidate(source=None, error=error)
        try:
            source = candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return providers.Candidate(source=None, error=f"candidate.py unreadable: {exc}")
        metadata = read_metadata(workspace / METADATA)
        named = metadata.pop("kb_records", None)
        proposed = providers.Candidate(source=source, **metadata)
        proposed.cited = knowledge.cited(context.knowledge, named)
        return proposed

    def _run(self, argv: list[str], workspace: Path, env: dict) -> str | None:
        outcome = runner.run(
            argv,
            timeout_s=self.options.agent_timeout_s,
            cwd=workspace,
            env=env,
            output=workspace / "agent.log",
        )
        if outcome.ok:
            return None
        if outcome.timed_out:
            return f"agent {outcome.describe()}"
        return f"agent {outcome.describe()} (see agent.log)"


def require_executable(executable: str, provider: str) -> str:
    """The agent executable's absolute path; refuses, before anything runs, one that is
    not there."""
    found = shutil.which(executable)
    if found is None:
        where = "is not executable" if os.path.sep in executable else "is not on PATH"
        raise GitkbError(
            f"the {provider} provider's agent {executable!r} {where} "
            "(install it, or name it with --agent-bin / --agent-command)"
        )
    return os.path.abspath(found)


class AgentCli(Provider):
    """A command provider whose argv is an agent CLI's own (the adapters subclass it):
    the executable is ``--agent-bin``, else ``$GITKB_<NAME>_BIN``, else the provider's
    name; ``--model`` passes on as the CLI's ``--model``."""

    def _check_options(self) -> None:
        pass  # the adapter writes the argv: there is no --agent-command to check

    def agent(self) -> tuple[str, list[str]]:
        """The executable and the model arguments of the agent's command line."""
        executable = (
            self.options.agent_bin or os.environ.get(f"GITKB_{self.name.upper()}_BIN") or self.name
        )
        return executable, (["--model", self.options.model] if self.options.model else [])
