"""Where the index cache reads its files from: the repository, opened on first use
(``RepoOpener``), and ``Lie``, what a cache caught holding other bytes raises."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitkb.errors import GitkbError
from gitkb.util import log
from gitkb.vcs.objects import Unreadable

if TYPE_CHECKING:  # type-only: importing it loads dulwich
    from gitkb.vcs.repository import Repository


class Lie(GitkbError):
    """The cache held bytes that are not the blob it named: rebuild it and ask again."""


class RepoOpener:
    """A repository opened on first use: a reader the cache answers for the commit main
    names never loads the VCS layer's dulwich side."""

    def __init__(self, location: str | None, repo: Repository | None = None) -> None:
        self.location = location
        self._repo = repo

    def __call__(self) -> Repository:
        if self._repo is None:
            from gitkb.vcs.repository import Repository  # dulwich

            self._repo = Repository.open(self.location)
        return self._repo

    def loaded(self) -> bool:
        return self._repo is not None


def blob_or_none(repo: Repository, sha: str) -> bytes | None:
    try:
        return repo.blob(sha)
    except (Unreadable, OSError) as exc:
        note = "object %s cannot be read from %s (%s)"
        log.logger(__name__).warning(note, sha, repo.git_dir, exc)
        return None
