"""The reviewer's static site of a store (``git kb report``): plain HTML, inline SVG, no
scripts; the markup lives in templates/site/."""

from __future__ import annotations

from gitkb.site.build import LadderPoint, build_site, ladder_svg, trace_ladder

__all__ = ["LadderPoint", "build_site", "ladder_svg", "trace_ladder"]
