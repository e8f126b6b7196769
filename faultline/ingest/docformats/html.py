"""HTML to sections with the standard library's html.parser: h1-h6 open sections.

Scripts, styles, navigation and the rest of ``<head>`` are dropped; block elements end lines,
table cells are joined with `` | `` and ``<pre>`` keeps its line breaks and indentation.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from faultline.ingest.docformats.common import Section, SectionBuilder, clean_title

_SKIP = {"script", "style", "nav", "noscript", "template", "svg", "iframe"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_PARAGRAPH = {"p", "div", "section", "article", "main", "aside", "header", "footer", "blockquote",
              "ul", "ol", "dl", "table", "figure", "figcaption", "caption", "form", "fieldset",
              "details", "summary", "hr", "address", "body"}
_LINE = {"br", "li", "dt", "dd", "tr", "option"}
_CELL = {"td", "th"}
_SPACES = re.compile(r"\s+")


def parse(text: str, doc_name: str) -> list[Section]:
    """Sections of an HTML page; the title is <title>, else the first <h1>, else ``doc_name``."""
    collector = _Collector()
    collector.feed(text)
    collector.close()
    collector.flush()
    items = collector.items
    headings = [item for item in items if item[0] == "heading"]
    title = collector.title or next((t for kind, lvl, t, _ in headings if lvl == 1 and t), "")
    first = headings[0] if headings else None
    # The page's own first heading usually repeats its title; it is not a section of its own.
    consumed = first if first is not None and title and first[2].casefold() == title.casefold() else None
    builder = SectionBuilder(title or doc_name)
    for item in items:
        kind, level, body, no = item
        if kind == "heading":
            if item is not consumed and body:
                builder.heading(level, body)
        else:
            builder.add(no, body)
    return builder.sections


class _Collector(HTMLParser):
    """Turns the tag stream into heading items and body-line items with source line numbers."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple[str, int, str, int]] = []
        self.title = ""
        self._skip = 0  # depth inside dropped elements
        self._pre = 0
        self._in_head = False
        self._in_title = False
        self._title_parts: list[str] = []
        self._heading: tuple[int, list[str], int] | None = None
        self._buf: list[str] = []
        self._buf_line = 0

    # -- output helpers ------------------------------------------------------------------
    def flush(self, paragraph: bool = False) -> None:
        text = "".join(self._buf)
        # Preformatted text keeps its indentation; elsewhere whitespace runs are one space.
        text = text.rstrip() if self._pre else _SPACES.sub(" ", text).strip()
        if text:
            self.items.append(("line", 0, text, self._buf_line))
        self._buf = []
        if paragraph:
            self.items.append(("line", 0, "", self.getpos()[0]))

    def _write(self, text: str, line: int) -> None:
        if not self._buf:
            self._buf_line = line
        self._buf.append(text)

    # -- parser callbacks ----------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag == "head":
            self._in_head = True
        elif tag == "title":
            self._in_title = True
        if self._skip or self._in_head:
            return
        if tag in _HEADINGS:
            self.flush(paragraph=True)
            self._heading = (_HEADINGS[tag], [], self.getpos()[0])
        elif tag == "pre":
            self.flush(paragraph=True)
            self._pre += 1
        elif tag in _PARAGRAPH:
            self.flush(paragraph=True)
        elif tag in _LINE:
            self.flush()
            if tag == "li":
                self._write("- ", self.getpos()[0])
        elif tag in _CELL and "".join(self._buf).strip():
            self._write(" | ", self.getpos()[0])

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br" and not (self._skip or self._in_head):
            self.flush()
        elif tag not in _SKIP:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "head":
            self._in_head = False
        elif tag == "title" and self._in_title:
            self._in_title = False
            self.title = self.title or clean_title("".join(self._title_parts))
        if self._skip or self._in_head:
            return
        if tag in _HEADINGS and self._heading is not None:
            level, parts, line = self._heading
            self._heading = None
            self.items.append(("heading", level, clean_title("".join(parts)), line))
        elif tag == "pre":
            self.flush(paragraph=True)
            self._pre = max(0, self._pre - 1)
        elif tag in _PARAGRAPH:
            self.flush(paragraph=True)
        elif tag in _LINE:
            self.flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
        if self._skip or self._in_head:
            return
        line = self.getpos()[0]
        if self._heading is not None:
            self._heading[1].append(data)
        elif self._pre:
            # Preformatted text keeps its own lines; each gets its true line number.
            for k, part in enumerate(data.split("\n")):
                if k:
                    self._flush_pre_line()
                self._write(part, line + k)
        else:
            self._write(_SPACES.sub(" ", data), line)

    def _flush_pre_line(self) -> None:
        text = "".join(self._buf).rstrip()
        self.items.append(("line", 0, text, self._buf_line))
        self._buf = []
