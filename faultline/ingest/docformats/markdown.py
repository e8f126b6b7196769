"""Markdown (CommonMark-ish) to sections: ATX and setext headings, fenced code kept verbatim."""

from __future__ import annotations

import re

from faultline.ingest.docformats.common import Section, SectionBuilder, first_heading_is_title

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^\s*([-*+>|]|\d+[.)])(\s|$)|^ {0,3}#|^ {4,}|^\s*<")
_LINK_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s+\S+.*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_COMMENT = re.compile(r"<!--.*?-->", re.S)

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*])")
_HTML_TAG = re.compile(r"</?(?:a|b|i|em|strong|code|span|div|p|br|img|sup|sub|kbd|details|summary)\b[^>]*>", re.I)
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def parse(text: str, doc_name: str) -> list[Section]:
    """Sections of a Markdown document; a lone top-level first heading is the title."""
    # Comments vanish but keep their newlines so line numbers stay true.
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    items = _scan(text.split("\n"))
    levels = [level for kind, level, _, _ in items if kind == "heading"]
    first = next((k for k, item in enumerate(items) if item[0] == "heading"), None)
    use_first = first is not None and first_heading_is_title(levels)
    builder = SectionBuilder(items[first][2] if use_first and first is not None else doc_name)
    for k, (kind, level, body, no) in enumerate(items):
        if kind == "heading":
            if not (use_first and k == first):
                builder.heading(level, body)
        else:
            builder.add(no, body)
    return builder.sections


def _scan(lines: list[str]) -> list[tuple[str, int, str, int]]:
    """Classify lines: ("heading", level, title, line_no) or ("line", 0, text, line_no)."""
    items: list[tuple[str, int, str, int]] = []
    fence: str | None = None
    n = len(lines)
    for i, line in enumerate(lines):
        no = i + 1
        if fence is not None:  # inside fenced code: everything is content until the closing fence
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = None
                items.append(("line", 0, "", no))
            else:
                items.append(("line", 0, line.rstrip(), no))
            continue
        if (m := _FENCE.match(line)) and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
            items.append(("line", 0, "", no))
            continue
        if i + 1 < n and _is_setext_text(line, lines[i - 1] if i else "") and _SETEXT.match(lines[i + 1]):
            items.append(("heading", 1 if lines[i + 1].strip()[0] == "=" else 2, _inline(line.strip()), no))
            continue
        if items and items[-1][0] == "heading" and items[-1][3] == i and _SETEXT.match(line):
            continue  # the underline of the setext heading just emitted
        if m := _ATX.match(line):
            title = _inline(m.group(2) or "").strip()
            # An empty "#" heading names nothing; it only ends the paragraph.
            items.append(("heading", len(m.group(1)), title, no) if title else ("line", 0, "", no))
            continue
        if _TABLE_RULE.match(line) and "|" in line:
            continue  # the header/body divider of a pipe table
        if _BREAK.match(line) or _LINK_DEF.match(line):
            items.append(("line", 0, "", no))
            continue
        items.append(("line", 0, _body_line(line), no))
    return items


def _is_setext_text(line: str, previous: str) -> bool:
    """A setext heading is a single paragraph line: not a list item, quote, table or code."""
    return bool(line.strip()) and not previous.strip() and not _NOT_PARAGRAPH.match(line) and not _FENCE.match(line)


def _body_line(line: str) -> str:
    stripped = line.strip()
    stripped = re.sub(r"^(>\s?)+", "", stripped)  # block quotes
    if stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1:
        cells = [_inline(c.strip()) for c in stripped[1:-1].split("|")]
        return " | ".join(c for c in cells if c)
    return _inline(stripped)


def _inline(text: str) -> str:
    """Inline markup reduced to visible text; code spans are protected from emphasis stripping."""
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_plain(text[pos:m.start()]))
        out.append(m.group(2).strip())
        pos = m.end()
    out.append(_plain(text[pos:]))
    return "".join(out)


def _plain(text: str) -> str:
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\2", text)
    return _ESCAPE.sub(r"\1", text)

