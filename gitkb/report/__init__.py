"""The reviewer's static site of a store (``git kb report``): plain HTML, inline SVG, no
scripts; the page skeleton and style live in templates/site/."""

from __future__ import annotations

from gitkb.report.build import build_site
from gitkb.report.ladder import LadderPoint, ladder_svg, trace_ladder

__all__ = ["LadderPoint", "build_site", "ladder_svg", "trace_ladder"]
