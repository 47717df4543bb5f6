"""Long-horizon journals (docs/trace-format.md §5, rule 5): what an episode tried, and the
supervisor's authoritative figure for what it gained.

Two places hold them in a trace's commits: the promotion's own
``memory/long_horizon_e<EEEE>.json`` (the attempt record with its ``journal``), and, where
a trace commits it, the supervisor's ``.atrex_long_horizon/episodes/e<EEEE>/`` folder
(``episode_runtime/journal.json`` and ``attempt.json``). Experiment ids are 1-based
positions in the journal; the authoritative gain is ``verification.improvement_pct``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitkb.record.values import finite_number, mapping, stripped_text
from gitkb.trace.files import MAX_EVIDENCE_BYTES, JsonProblem, TraceFiles, parse_json
from gitkb.util.attributes import attributes

SUPERVISOR_DIR = ".atrex_long_horizon"
_EPISODE_FILE = re.compile(
    rf"^{re.escape(SUPERVISOR_DIR)}/episodes/e(\d+)/(episode_runtime/journal\.json|attempt\.json)$"
)
_VERSION = re.compile(r"^v(\d+)$")


@dataclass
class Journal:
    episode: int
    path: str  # the file the experiments are cited from (relative to the trace root)
    experiments: list[dict] = field(default_factory=list)  # each with its 1-based "index"
    version: int | None = None  # the memory version the episode recorded
    improvement_pct: float | None = None  # the supervisor's verified gain over the incumbent
    status: str | None = None
    summary: str = ""

    def excerpt(self) -> dict:
        """What a distiller is shown of the journal (scrubbed by the packet builder)."""
        stated = "episode status summary authoritative_improvement_pct=improvement_pct"
        return attributes(self, stated) | {
            "experiments": [
                {k: str(e.get(k) or "") for k in ("index", "name", "hypothesis", "change")}
                | {k: str(e.get(k) or "") for k in ("evidence", "result", "decision")}
                for e in self.experiments
            ],
        }


def promotion_journal(files: TraceFiles, path: str, episode: int) -> Journal | None:
    """The journal of ``memory/long_horizon_e<EEEE>.json`` as the promotion committed it."""
    document = mapping(files.json(path))
    if not document:
        return None
    return _journal(episode, path, mapping(document.get("journal")), document)


def supervisor_journals(files: TraceFiles) -> dict[int, Journal]:
    """Episode -> journal, from a committed ``.atrex_long_horizon/`` folder (none: {})."""
    found: dict[int, dict[str, str]] = {}
    for path, _sha in files.repo.list_tree(files.commit, SUPERVISOR_DIR):
        match = _EPISODE_FILE.match(path)
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = path
    budget = [0]
    journals = {}
    for episode, paths in sorted(found.items()):
        if budget[0] > MAX_EVIDENCE_BYTES:
            break
        journal = _read(files, paths.get("episode_runtime/journal.json"), budget)
        attempt = _read(files, paths.get("attempt.json"), budget)
        if not journal and not attempt:
            continue
        path = paths.get("episode_runtime/journal.json") or paths["attempt.json"]
        journals[episode] = _journal(episode, path, journal, attempt)
    return journals


def _read(files: TraceFiles, path: str | None, budget: list[int]) -> dict:
    if path is None:
        return {}
    data = files.read(path, budget)
    if data is None:
        return {}
    try:
        return mapping(parse_json(data))
    except JsonProblem as problem:
        files.refused.append(f"{path}: {problem}, ignored")
        return {}


def _journal(episode: int, path: str, journal: dict, attempt: dict) -> Journal:
    experiments = journal.get("experiments")
    indexed = [
        {**entry, "index": position}
        for position, entry in enumerate(experiments if isinstance(experiments, list) else [], 1)
        if isinstance(entry, dict)
    ]
    version = attempt.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        memory = _VERSION.match(stripped_text(journal.get("memory_version")))
        version = int(memory.group(1)) if memory else None
    verification = mapping(attempt.get("verification"))
    outcome = mapping(journal.get("outcome"))
    return Journal(
        episode=episode,
        path=path,
        experiments=indexed,
        version=version,
        improvement_pct=finite_number(verification.get("improvement_pct")),
        status=stripped_text(attempt.get("status")) or stripped_text(journal.get("state")) or None,
        summary=stripped_text(outcome.get("summary")) or stripped_text(attempt.get("summary")),
    )
