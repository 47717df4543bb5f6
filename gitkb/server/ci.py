"""``git kb ci FORGE``: the workflow that runs ``git kb check`` on every pull or merge
request of a forge that runs no server hooks, committed through the store's one write
path (one ``kb config`` commit, signed where git is configured to sign)."""

from __future__ import annotations

from gitkb import __version__
from gitkb.server import control
from gitkb.store import Store
from gitkb.store.view import StoreView
from gitkb.store.writer import Admission, Change

FORGES = tuple(control.CI_FILES)


def write_ci(store: Store, forge: str) -> Admission:
    """Commit ``forge``'s workflow, pinned to this gitkb; nothing when it is there already."""
    path = control.CI_FILES[forge]
    wanted = control.ci_file(forge, __version__)

    def build(view: StoreView) -> Change:
        if view.tip is not None and store.repo.read(view.tip, path) == wanted:
            return Change("config", f"ci-{forge}", {}, path=path, note="already up to date")
        return Change(
            "config",
            f"ci-{forge}",
            {path: wanted},
            path=path,
            body=f"The {forge} workflow that runs `git kb check` (gitkb {__version__}).",
        )

    return store.commit([build])[0]
