"""docs/agents.md shows each agent's MCP registration block exactly as `git kb mcp
--print-config` prints it, so the page never drifts from the command."""

from __future__ import annotations

import re

from click.testing import CliRunner
from helpers import ROOT

from gitkb.agents.registration import CLIENTS
from gitkb.store import Store

PAGE = ROOT / "docs" / "agents.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
PRINTS = re.compile(r"^git kb mcp --print-config (\w+) --store (\S+)", re.M)


def shown_blocks(text: str) -> list[tuple[str, str, str]]:
    """(client, store path, block) for each code block that follows a block running
    `git kb mcp --print-config CLIENT --store PATH`."""
    found = []
    asked: tuple[str, str] | None = None
    for fence in FENCE.finditer(text):
        if asked is not None and fence.group(1).strip() in ("json", "toml"):
            found.append((*asked, fence.group(2)))
        command = PRINTS.search(fence.group(2))
        asked = (command.group(1), command.group(2)) if command else None
    return found


def printed(client: str, store: Store) -> str:
    from gitkb.cli import cli  # built on first use: the module's __getattr__

    done = CliRunner().invoke(cli, ["mcp", "--print-config", client, "--store",
                                    str(store.location)])  # fmt: skip
    assert done.exit_code == 0, done.output
    return done.output


def test_the_page_shows_each_block_as_print_config_prints_it(tmp_path):
    store = Store.init(tmp_path / "kb", bare=True)
    real = str(store.location.resolve())
    blocks = shown_blocks(PAGE.read_text(encoding="utf-8"))
    assert sorted(client for client, _, _ in blocks) == sorted(CLIENTS)
    for client, path, block in blocks:
        assert printed(client, store).replace(real, path) == block, client


def test_the_check_sees_a_drifted_block():
    page = "```\ngit kb mcp --print-config json --store /srv/kb\n```\n\n```json\n{}\n```\n"
    assert shown_blocks(page) == [("json", "/srv/kb", "{}\n")]
    assert shown_blocks(page.replace("```json", "```text")) == []
