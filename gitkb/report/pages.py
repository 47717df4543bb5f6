"""HTML building blocks of the site; the page skeleton and style live in templates/site/."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from string import Template

from gitkb.util.resources import data_dir


@dataclass(frozen=True)
class Link:
    """A table cell that links to another page of the site."""

    text: str
    href: str


@cache
def _template() -> tuple[Template, str]:
    folder = data_dir("templates") / "site"
    page = Template((folder / "page.html").read_text(encoding="utf-8"))
    return page, (folder / "style.css").read_text(encoding="utf-8")


def page(title: str, body: str) -> str:
    template, style = _template()
    return template.substitute(title=html.escape(title), style=style, body=body)


def cell(value: object) -> str:
    if isinstance(value, Link):
        return f'<a href="{html.escape(value.href)}">{html.escape(value.text)}</a>'
    return html.escape("" if value is None else str(value))


def table(headers: list[str], rows: Sequence[Sequence[object]]) -> str:
    if not rows:
        return '<p class="muted">None.</p>'
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def record_page_name(record_id: str) -> str:
    return f"record-{record_id}.html"


def trace_page_name(label: str) -> str:
    return f"trace-{label}.html"
