"""Every path and ref name of a store, defined once.

``main`` holds records and what humans and hooks read beside them; derived data
(the index) lives in a cache under the git directory, never in history.
"""

from __future__ import annotations

from gitkb.record import RECORDS_DIR

BRANCH = "refs/heads/main"
TRACE_REFS = "refs/kb/traces/"
TRACE_REFSPEC = f"{TRACE_REFS}*:{TRACE_REFS}*"  # push and fetch the traces with the records
CONFIG_PATH = "gitkb.toml"
CONFLICTS_DIR = "conflicts"
LEDGER_DIR = "ledger"
FEEDBACK_DIR = "feedback"
TRACE_OPTIONS_PATH = "traces/{label}.json"
REPORTS_DIR = "reports/{label}"
# Under the git directory: caches derived from history, rebuilt whenever missing.
CACHE_DIR = "gitkb-cache"
# A work tree may carry a generated, git-ignored copy of the index for folder readers.
WORK_TREE_INDEX = f"{RECORDS_DIR}/index.json"
GITIGNORE_PATH = ".gitignore"

# gitkb.toml's [store] format: 1 committed records/index.json, 2 keeps it out of history.
FORMAT_1 = "gitkb-1"
FORMAT_2 = "gitkb-2"

# Folders whose changes are admissions: a commit touching them must say so in trailers.
ADMITTED_DIRS = (RECORDS_DIR, CONFLICTS_DIR, LEDGER_DIR, FEEDBACK_DIR)
# Folders the index cache keeps the files of, so readers need not open the repository.
CACHED_DIRS = (RECORDS_DIR, LEDGER_DIR, FEEDBACK_DIR)


def trace_ref(label: str) -> str:
    return TRACE_REFS + label


def ledger_path(record_id: str) -> str:
    return f"{LEDGER_DIR}/{record_id}.jsonl"


def feedback_path(record_id: str) -> str:
    return f"{FEEDBACK_DIR}/{record_id}.jsonl"


def conflict_path(record_id: str, number: int) -> str:
    return f"{CONFLICTS_DIR}/{record_id}.{number}.json"


def id_of(path: str) -> str:
    """The record id a store path belongs to: ``records/../<id>.json``,
    ``conflicts/<id>.<n>.json``, ``ledger/<id>.jsonl``, ``feedback/<id>.jsonl``."""
    name = path.rsplit("/", 1)[-1]
    if path.startswith(CONFLICTS_DIR + "/"):
        stem = name.removesuffix(".json")
        head, _, n = stem.rpartition(".")
        return head if head and n.isdigit() else stem
    if path.startswith((LEDGER_DIR + "/", FEEDBACK_DIR + "/")):
        return name.removesuffix(".jsonl")
    return name.removesuffix(".json")
