"""The `git-kb` command line: parse, dispatch to one module per verb, print.

Verb modules are imported only when their verb runs (the lazy command table,
``COMMANDS``), so `git kb --help` and each verb load only what they use.
"""

from __future__ import annotations

import gc
import importlib
import sys

import click

from gitkb import __version__
from gitkb.error_handler import error_handler
from gitkb.errors import echoed
from gitkb.util.log import set_verbosity

# verb -> (module under gitkb.commands, one-line help shown by `git kb --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "Create a new store (a git repository whose commits are admissions)."),
    "admit": ("admit", "Admit record files as insert, confirm or conflict: one commit each."),
    "match": ("match", "Print the store's same-scope candidates for a record (JSON)."),
    "show": ("show", "Print one record as stored."),
    "list": ("list_", "List records, filtered by type, vendor, arch, dsl or operator."),
    "log": ("log", "Show the admission history, read from commit trailers."),
    "reindex": ("reindex", "Rebuild the index cache (and a work tree's records/index.json)."),
    "upgrade": ("upgrade", "Upgrade a store to format 2 (the index leaves history)."),
    "renumber": ("renumber", "Give this clone's unpushed admission of an id a fresh id."),
    "validate": ("validate", "Run the gates on a store or a records folder."),
    "check": ("check", "The verdict the server would give a push of HEAD onto BASE."),
    "ci": ("ci", "Commit the forge workflow (github, gitlab) that runs check on each request."),
    "import": ("import_", "Import another tool's records (gpu-wiki, geak)."),
    "export": ("export", "Export the store in another tool's layout (gpu-wiki, tlx-knowledge)."),
    "schema": ("schema", "Show, check or regenerate the opt-trace-1.0 profile."),
    "report": ("report", "Write the reviewer's summary of the store as a static HTML site."),
    "examples": ("examples", "Print the paths of the example records shipped with gitkb."),
    "hook": ("hook", "Entry points the git hooks call (pre-commit, commit-msg, pre-receive)."),
    "hooks": ("hooks", "Install the gate hooks: local ones in a store, pre-receive on a server."),
    "access": ("access", "Who may sign the store's commits, and their roles (signed)."),
    "resolve": ("resolve", "Offer the store's best same-hardware code for a kernel (JSON)."),
    "attest": ("attest", "Record a warm-start outcome in the record's ledger."),
    "query": ("query", "Ask the store what it knows: scoped, ranked knowledge for an agent."),
    "feedback": ("feedback", "Report whether a record helped: an append-only feedback event."),
    "mcp": ("mcp", "Serve the store to coding agents as MCP tools and resources over stdio."),
    "skills": ("skills", "gitkb's Agent Skills: list them, or export them for an agent."),
    "retract": ("retract", "Take a record back (tombstone; the record stays)."),
    "unretract": ("unretract", "Lift a record's retraction."),
    "curate": ("curate", "Retire what the ledgers say to retire (--retire; dry run by default)."),
    "optimize": ("optimize", "Optimize a kernel with a harness bundle; commit the winner (JSON)."),
    "mine": ("mine", "Mine a trace repository into records: one admission commit each."),
    "recon": ("recon", "Print a trace's evidence-density report (ingest and recon only)."),
    "demo": ("demo", "Run the whole loop on the bundled CPU example, narrated."),
    "help": ("help", "Show help for a verb: git kb help VERB."),
}


VERSION_LINE = f"git-kb, version {__version__}"  # what click's version option prints


class LazyGroup(click.Group):
    """The verbs of ``COMMANDS``, each verb's module imported only when that verb runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"gitkb.commands.{COMMANDS[name][0]}")
        return _text_checked(module.command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, text) for name, (_, text) in COMMANDS.items()])


def _text_checked(command: click.Command) -> click.Command:
    """``command``, and each of its subcommands, refusing an argument that is not UTF-8
    text where it wants text: click hands on a non-UTF-8 argument as a string holding
    surrogate escapes, which no record, SQL statement or printed answer can hold. A path
    (``click.Path``, ``click.File``) may be any bytes the file system allows."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _text_checked(sub)
    callback = command.callback
    if callback is None or getattr(callback, "text_checked", False):
        return command
    texts = [p for p in command.params if not isinstance(p.type, (click.Path, click.File))]

    def checked(*args: object, **kwargs: object) -> object:
        for param in texts:
            value = kwargs.get(param.name or "")
            for text in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(text, str) and not text.isascii() and not _utf8(text):
                    typed = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                    raise click.BadParameter(f"{echoed(typed)} is not UTF-8 text", param=param)
        return callback(*args, **kwargs)

    checked.text_checked = True  # type: ignore[attr-defined]
    command.callback = checked
    return command


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "-V", "--version", prog_name="git-kb")
@click.option("-v", "--verbose", is_flag=True, help="Debug notes on stderr too.")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings on stderr: no notes.")
def cli(verbose: bool, quiet: bool) -> None:
    """gitkb: a git-native knowledge base of GPU-kernel optimization experience.

    Run `git kb help VERB` or `git kb VERB -h` for a verb's options.
    """
    set_verbosity(verbose, quiet)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    # A command is one short batch: collecting cycles every 700 allocations walks its
    # long-lived rows (trace versions, packets, cache rows) again and again.
    gc.set_threshold(50_000, 20, 20)
    try:
        with error_handler():
            cli.main(args=args, prog_name="git-kb", standalone_mode=True)
    finally:
        if argv is None:
            # The process ends next. Its objects need no cycle collection on the way out:
            # shutdown's own collection walks every object the command made, which costs a
            # read verb as much as its query.
            gc.freeze()
