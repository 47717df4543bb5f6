"""The claude adapter: the command provider with the argv of Anthropic's Claude Code CLI.

``claude -p`` runs one non-interactive turn in the workspace (the working
directory), allowed to read and edit files there; ``--agent-bin`` (or
``GITKB_CLAUDE_BIN``) names another executable, ``--model`` the model it uses.
"""

from __future__ import annotations

from pathlib import Path

from gitkb.optimize.providers import command


class Provider(command.AgentCli):
    name = "claude"

    def argv(self, workspace: Path, prompt_file: Path, prompt: str) -> list[str]:
        executable, model = self.agent()
        return [
            executable,
            "-p",
            prompt,
            *model,
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Read,Edit,Write",
            "--output-format",
            "text",
        ]
