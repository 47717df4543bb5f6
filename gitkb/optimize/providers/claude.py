"""The claude adapter: the command provider with the argv of Anthropic's Claude Code CLI.

``claude -p`` runs one non-interactive turn in the workspace (the working
directory), allowed to read and edit files there; ``--agent-bin`` (or
``GITKB_CLAUDE_BIN``) names another executable, ``--model`` the model it uses.
"""

from __future__ import annotations

import os

from gitkb.optimize.providers import command


class Provider(command.Provider):
    name = "claude"

    def _check_options(self) -> None:
        pass

    def argv(self, workspace, prompt_file, prompt):
        executable = self.options.agent_bin or os.environ.get("GITKB_CLAUDE_BIN") or "claude"
        model = ["--model", self.options.model] if self.options.model else []
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
