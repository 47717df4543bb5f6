"""Git's object files, read and written with the standard library alone: loose objects
(``loose``), packs and their version-2 indexes (``pack``, ``pack_writer``), tree bodies
(``tree``), commit bodies (``commit``) and one lookup over a repository's object
directories (``files``).

Whatever these cannot give (an object absent, damaged, or stored in a way they leave to
dulwich) raises ``Unreadable``, and nothing else: a reader of history that meets a bad
object says so in one line, never with a traceback. The repository above
(``gitkb.vcs.repository``) asks dulwich where these leave a case to it; the read verbs
need no dulwich at all.
"""

from __future__ import annotations

from gitkb.errors import GitkbError

# git's object type numbers (a pack entry's type field)
COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
TYPE_NAMES = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob", TAG: b"tag"}
TYPE_NUMBERS = {name: number for number, name in TYPE_NAMES.items()}


class Unreadable(GitkbError):
    """An object that cannot be read: absent, damaged, or stored in a way this layer
    leaves to another reader. The message names the object and what is wrong;
    ``elsewhere`` says another reader may still give it (absent from every pack and
    folder read here, or in a form read elsewhere), where a damaged file never does."""

    def __init__(self, message: str, elsewhere: bool = False) -> None:
        super().__init__(message)
        self.elsewhere = elsewhere
