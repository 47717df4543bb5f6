"""The codex adapter: the command provider with the argv of OpenAI's Codex CLI.

``codex exec`` runs one non-interactive turn in the workspace with edits allowed;
``--agent-bin`` (or ``GITKB_CODEX_BIN``) names another executable, ``--model`` the
model it uses.
"""

from __future__ import annotations

import os

from gitkb.optimize.providers import command


class Provider(command.Provider):
    name = "codex"

    def _check_options(self) -> None:
        pass

    def argv(self, workspace, prompt_file, prompt):
        executable = self.options.agent_bin or os.environ.get("GITKB_CODEX_BIN") or "codex"
        model = ["--model", self.options.model] if self.options.model else []
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
