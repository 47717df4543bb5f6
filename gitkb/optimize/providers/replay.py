"""The replay provider: candidates from a folder, in file-name order.

Each ``*.py`` file is one candidate; a ``<name>.json`` beside it may hold its
metadata (the same keys an agent writes). Used by tests and to reproduce a run.
"""

from __future__ import annotations

from pathlib import Path

from gitkb.errors import GitkbError
from gitkb.optimize import providers
from gitkb.optimize.providers.command import read_metadata


class Provider(providers.Provider):
    name = "replay"

    def __init__(self, options: providers.ProviderOptions, tunables: dict[str, list]) -> None:
        super().__init__(options, tunables)
        folder = Path(options.replay_dir or "")
        if not options.replay_dir or not folder.is_dir():
            raise GitkbError(f"the replay provider needs a folder of candidates ({folder})")
        self._files = sorted(folder.glob("*.py"))
        if not self._files:
            raise GitkbError(f"no *.py candidates in the replay folder ({folder})")

    def propose(self, context: providers.ProposalContext) -> providers.Candidate | None:
        if not self._files:
            return None
        path = self._files.pop(0)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return providers.Candidate(source=None, error=f"{path.name} unreadable: {exc}")
        metadata = read_metadata(path.with_suffix(".json"))
        metadata.setdefault("change", f"replayed {path.name}")
        return providers.Candidate(source=source, **metadata)
