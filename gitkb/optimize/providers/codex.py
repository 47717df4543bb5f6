"""The codex adapter: the command provider with the argv of OpenAI's Codex CLI.

``codex exec`` runs one non-interactive turn in the workspace with edits allowed;
``--agent-bin`` (or ``GITKB_CODEX_BIN``) names another executable, ``--model`` the
model it uses.
"""

from __future__ import annotations

from pathlib import Path

from gitkb.optimize.providers import command


class Provider(command.AgentCli):
    name = "codex"

    def argv(self, workspace: Path, prompt_file: Path, prompt: str) -> list[str]:
        executable, model = self.agent()
        return [
            executable,
            "exec",
            "--full-auto",
            "--skip-git-repo-check",
            *model,
            "--cd",
            str(workspace),
            prompt,
        ]
