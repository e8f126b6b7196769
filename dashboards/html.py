"""Small HTML building blocks: every value is escaped unless it is already an `Html` fragment.

The page frame and the stylesheet are files under `dashboards/templates/` (plain `string.Template`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import quote

TEMPLATES = Path(__file__).resolve().parent / "templates"
NAV = [("index.html", "Overview"), ("incidents.html", "Incidents"), ("stratification.html", "Stratification"),
       ("rounds.html", "Refinement rounds"), ("sade.html", "SADE"), ("cost.html", "Cost")]
NO_DATA_FIX = ("Analyse some incidents (faultline nightly, faultline report ID, faultline diagnose ID --save or "
               "faultline eval ...), then refresh the marts (faultline marts refresh) and build again.")


class Html(str):
    """A fragment that is already safe HTML (built by these helpers); never escaped again."""


def fmt(value: Any, digits: int = 2) -> str:
    """A cell value as text: '-' for missing, rounded floats, joined lists, seconds-precision times."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value) if value else "-"
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


def esc(value: Any, digits: int = 2) -> Html:
    """`value` formatted and escaped (an `Html` fragment passes through unchanged)."""
    return value if isinstance(value, Html) else Html(escape(fmt(value, digits)))


def link(href: str, text: Any) -> Html:
    return Html(f'<a href="{escape(href)}">{esc(text)}</a>')


def incident_file(incident_id: str) -> str:
    """The page file name of an incident: its id when that is a safe file name, else a slug + short hash."""
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", incident_id)[:120]
    if slug != incident_id or slug.startswith("."):
        slug = f"{slug.lstrip('.')}-{hashlib.sha1(incident_id.encode()).hexdigest()[:8]}"
    return slug + ".html"


def incident_href(incident_id: str, root: str = "") -> str:
    """Relative link to an incident page from a page at `root` ('' for the site folder, '../' inside incidents/)."""
    return f"{root}incidents/{quote(incident_file(incident_id))}"


def tag(name: str, content: Any, **attrs: Any) -> Html:
    """`<name attrs>content</name>`; attribute names use '_' for '-' and a trailing '_' for class_."""
    rendered = "".join(f' {k.rstrip("_").replace("_", "-")}="{escape(fmt(v), quote=True)}"'
                       for k, v in attrs.items() if v is not None)
    return Html(f"<{name}{rendered}>{esc(content)}</{name}>")


def join(parts: Iterable[Any]) -> Html:
    return Html("\n".join(esc(p) for p in parts))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, class_: str | None = None,
          digits: int = 2, row_classes: Sequence[str | None] | None = None) -> Html:
    """A table; numbers are right-aligned, everything else escaped unless it is `Html`. `row_classes`, when
    given, holds one class (or None) per row."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for n, row in enumerate(rows):
        cells = []
        for value in row:
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            cells.append(f'<td class="num">{esc(value, digits)}</td>' if numeric else f"<td>{esc(value, digits)}</td>")
        row_class = row_classes[n] if row_classes is not None else None
        opening = f'<tr class="{escape(row_class, quote=True)}">' if row_class else "<tr>"
        body.append(opening + "".join(cells) + "</tr>")
    cls = f' class="{escape(class_)}"' if class_ else ""
    return Html(f"<table{cls}><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table>")


def facts(pairs: Iterable[tuple[str, Any]]) -> Html:
    """A definition list of label: value pairs."""
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs)
    return Html(f'<dl class="facts">{items}</dl>')


def no_data(what: str, missing: Iterable[str] = ()) -> Html:
    """The 'no data yet' box a page shows instead of an empty table or chart."""
    missing = sorted(missing)
    extra = (f" The mart(s) {', '.join(missing)} have not been built in this warehouse." if missing else "")
    return Html(f'<div class="empty"><strong>No data yet</strong>: {esc(what)}.{esc(extra)} '
                f'<span class="note">{esc(NO_DATA_FIX)}</span></div>')


def render_page(*, title: str, page_id: str, body: Html, root: str, generated: str, warehouse: str,
                current: str) -> str:
    """The whole HTML document: frame template + navigation + body. `root` is '' or '../'."""
    current_attr = ' class="current"'
    nav = "".join(f'<a href="{escape(root + href)}"{current_attr if href == current else ""}>{escape(label)}</a>'
                  for href, label in NAV)
    frame = Template((TEMPLATES / "page.html").read_text(encoding="utf-8"))
    return frame.substitute(title=escape(title), page_id=escape(page_id), nav=nav, body=body, root=escape(root),
                            generated=escape(generated), warehouse=escape(warehouse))


def stylesheet() -> str:
    return (TEMPLATES / "style.css").read_text(encoding="utf-8")
