"""GEAK experience stores (``<root>/<gfx>/<kernel_class>/<slug>/<exp_id>/``) -> records.

``reader`` reads the tree and applies GEAK's own write gate, ``mapper`` turns an
entry into records and ledger lines, ``write`` gates them and writes one
``import`` commit through the store's write path.
"""

from gitkb.importers.geak.write import import_tree

__all__ = ["import_tree"]
