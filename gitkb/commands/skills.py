from pathlib import Path

import click

from gitkb.agents.skills import AGENT_FOLDERS, shipped
from gitkb.agents.skills import export as write
from gitkb.commands import echo_json


@click.group("skills")
def command() -> None:
    """gitkb's Agent Skills (mine, warm-start, optimize, distill): list or export them."""


@command.command("list")
def list_() -> None:
    """Print the shipped skills as JSON: name and description of each."""
    echo_json([{"name": s.name, "description": s.description} for s in shipped()])


@command.command("export")
@click.argument("root", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--agent",
    type=click.Choice(list(AGENT_FOLDERS)),
    default="generic",
    show_default=True,
    help="Where under DIR: claude .claude/skills/, codex .agents/skills/, generic DIR itself.",
)
@click.option("--force", is_flag=True, help="Replace a SKILL.md there that has other content.")
def export(root: str, agent: str, force: bool) -> None:
    """Write every skill as <name>/SKILL.md where AGENT looks for a project's skills.

    DIR is the project's root for claude and codex. An edited SKILL.md already there is
    refused (nothing written) unless --force. Prints what it wrote as JSON.
    """
    done = write(Path(root), agent, force)
    echo_json({"agent": agent, "skills": [{"name": e.name, "path": e.path,
                                           "written": e.written} for e in done]})  # fmt: skip
