"""Commit bodies: the fields gitkb reads, parsed from the bytes git writes."""

from __future__ import annotations

from dataclasses import dataclass

from gitkb.vcs.objects import Unreadable
from gitkb.vcs.trailers import parse_trailers


@dataclass(slots=True, frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    author: str
    committer: str
    author_time: int
    commit_time: int
    message: str
    tree: str = ""

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    @property
    def trailers(self) -> list[tuple[str, str]]:
        return parse_trailers(self.message)


def parse_commit(sha: str, raw: bytes) -> CommitInfo:
    """A commit object's fields read from its bytes: the headers git writes (``tree``,
    ``parent``, ``author``, ``committer``; others and their continuation lines skipped),
    a blank line, the message. Walking a trace reads every commit once; a dulwich Commit
    costs several times this. Headers it cannot read raise ``Unreadable``."""
    head, _, message = raw.partition(b"\n\n")
    tree, parents, people = b"", [], {}
    try:
        for line in head.split(b"\n"):
            name, _, value = line.partition(b" ")
            if name == b"parent":
                parents.append(value.decode("ascii"))
            elif name == b"tree":
                tree = value
            elif name in (b"author", b"committer") and name not in people:
                ident, when, _zone = value.rsplit(b" ", 2)
                people[name] = (ident.decode("utf-8", "replace"), int(when))
        author, author_time = people[b"author"]
        committer, commit_time = people[b"committer"]
        return CommitInfo(
            sha=sha,
            parents=tuple(parents),
            author=author,
            committer=committer,
            author_time=author_time,
            commit_time=commit_time,
            message=message.decode("utf-8", "replace"),
            tree=tree.decode("ascii"),
        )
    except (KeyError, ValueError):  # UnicodeDecodeError is a ValueError
        raise Unreadable(f"commit {sha} has headers this reader does not parse") from None
