"""The one VCS layer: every repository access in gitkb goes through this package.

``repository`` (a git repository over dulwich: reads, diffs, commits without a
work tree, compare-and-swap refs, the writer lock), ``pack`` (packs written from
memory, object sizes), ``trailers`` (pure trailer blocks), ``kernel_repo`` (the
user's git or Mercurial repository a winner is committed into) and ``push``
(C git's push, where the server side is the component being driven).
"""
