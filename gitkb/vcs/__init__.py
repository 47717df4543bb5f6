"""The one VCS layer: every repository access in gitkb goes through this package.

``repository`` (a git repository over dulwich: reads, diffs, commits without a
work tree, compare-and-swap refs), ``worktree`` (the writer lock, and the work
tree following commits written without it), ``pack`` (packs written from
memory, object sizes), ``plain`` (what needs no dulwich: a ref read from the git
directory, a blob's id, the committer identity), ``odb`` and ``tree_ids`` (commits
and trees read from the object files: the readers' check of main's tree),
``trailers`` (pure trailer blocks), ``kernel_repo`` (the user's git or Mercurial
repository a winner is committed into, with C git where hooks and signing apply)
and ``push`` (C git's push, where the server side is the component being driven).
"""
