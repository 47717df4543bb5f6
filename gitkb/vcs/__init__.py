"""The one VCS layer: every repository access in gitkb goes through this package.

Bottom up: ``objects`` (git's object files read and written with the standard library:
loose objects, packs and their indexes, tree and commit bodies, one ``Unreadable``
error), ``plain`` (what needs no dulwich: a ref read from the git directory, a blob's
id, the committer identity), ``tree_ids`` (blob ids at paths of a commit, from the
object files: the read verbs' check of main's tree), ``fallback`` (dulwich beside the
object layer), ``pending`` (trees as a commit edits and a batch holds them),
``repository`` (a git repository: reads, commits without a work tree, batches stored as
one pack, compare-and-swap refs), ``treediff`` (what differs between two trees),
``worktree`` (the writer lock, and the work tree following commits written without
it), ``signing`` (commit signatures made and checked by git's ssh signing program,
and the server's anchor), ``receiving``, ``trailers``, ``kernel_repo`` (the user's git
or Mercurial repository a winner is committed into, with C git where hooks and signing
apply) and ``push`` (C git's push, where the server side is the component being driven).
"""
