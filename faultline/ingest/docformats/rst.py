"""reStructuredText (Sphinx flavour, as in the FRR user guide and man pages) to sections.

Not a full docutils parser: it recognises the constructs the FRR docs use and reduces them to
readable text. Section titles are underlined (optionally overlined) with a repeated punctuation
character; levels follow the order in which each adornment style first appears.
"""

from __future__ import annotations

import re

from faultline.ingest.docformats.common import Line, Section, SectionBuilder, dedent, first_heading_is_title

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")
_EXPLICIT = re.compile(r"^(\s*)\.\.(?:\s+(.*))?$")
_DIRECTIVE = re.compile(r"^([\w:.+-]+) ?::(?:\s+(.*))?$")
_SUBST_DEF = re.compile(r"^\|([^|]+)\|\s+([\w-]+)::\s*(.*)$")
_FOOTNOTE = re.compile(r"^\[([^\]]+)\]\s+(.*)$")
_OPTION_FIELD = re.compile(r"^\s+:[\w-]+:(\s.*)?$")
_TABLE_BORDER = re.compile(r"^\s*(\+[-=+:]+\+|=+( +=+)+|-+( +-+)+|([-=~^\"#*+_])\4{3,})\s*$")
_TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_LINE_BLOCK = re.compile(r"^(\s*)\| ")

# Directives whose arguments and content are build instructions, not prose.
_DROP = {"index", "include", "toctree", "program", "role", "image", "highlight", "contents",
         "sectnum", "meta", "raw", "literalinclude", "default-role", "tabularcolumns", "only-html"}
# Directives whose content is shown verbatim.
_LITERAL = {"code-block", "code", "sourcecode"}
# Directives whose argument is itself the useful text, with the label we give it.
_LABELLED = {"clicmd": "Command", "option": "Option", "envvar": "Environment variable",
             "describe": "", "object": "", "productionlist": ""}
_ADMONITION_LABEL = {"seealso": "See also", "deprecated": "Deprecated since version",
                     "versionadded": "New in version", "versionchanged": "Changed in version"}
_ADMONITIONS = {"note", "warning", "important", "tip", "caution", "attention", "danger", "hint",
                "error", "admonition", "topic", "rubric", *_ADMONITION_LABEL}

# Inline constructs that are replaced as a whole: ``literal``, :role:`text`, `link`_, `text`.
_INLINE = re.compile(
    r"``(?P<lit>[^`].*?)``"
    r"|:(?P<role>[\w.+-]+(?::[\w.+-]+)*):`(?P<roletext>[^`]*)`"
    r"|`(?P<link>[^`]+)`__?"
    r"|`(?P<interp>[^`]+)`",
    re.S,
)
_LINK_TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)
_LINK_ROLES = {"ref", "doc", "term", "numref", "any", "download", "std:ref", "external"}
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.S)
_EMPHASIS = re.compile(r"(?<![\w*\\])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])", re.S)
_SUBST_REF = re.compile(r"(?<![\w|])\|([^|\s][^|]*?)\|(?![\w|])")
_ESCAPE = re.compile(r"\\(.)")


def parse(text: str, doc_name: str) -> list[Section]:
    """Sections of an RST document; the first heading is the title when it is the only top one."""
    lines = text.split("\n")
    headings = _find_headings(lines)
    levels = [level for level, _, _ in headings.values()]
    title_at = min(headings) if headings and first_heading_is_title(levels) else None
    builder = SectionBuilder(headings[title_at][1] if title_at is not None else doc_name)
    _Renderer(lines, headings, title_at, _substitutions(lines), builder).run()
    return builder.sections


def _find_headings(lines: list[str]) -> dict[int, tuple[int, str, int]]:
    """Map the first line index of each title to (level, title, lines it spans)."""
    styles: list[tuple[str, bool]] = []
    found: dict[int, tuple[int, str, int]] = {}
    n, i = len(lines), 0
    while i < n:
        line = lines[i]
        prev_blank = i == 0 or not lines[i - 1].strip() or (i - 1) in found or _ADORNMENT.match(lines[i - 1])
        if (_ADORNMENT.match(line) and i + 2 < n and lines[i + 1].strip() and _ADORNMENT.match(lines[i + 2])
                and lines[i + 2][0] == line[0] and len(line.rstrip()) >= len(lines[i + 1].strip())):
            style, title, span = (line[0], True), lines[i + 1].strip(), 3
        elif (prev_blank and line.strip() and not line[0].isspace() and not _ADORNMENT.match(line)
              and not _EXPLICIT.match(line) and i + 1 < n and _ADORNMENT.match(lines[i + 1])
              and len(lines[i + 1].rstrip()) >= len(line.rstrip())):
            style, title, span = (lines[i + 1][0], False), line.strip(), 2
        else:
            i += 1
            continue
        if style not in styles:
            styles.append(style)
        found[i] = (styles.index(style), _reduce_inline(title, {}), span)
        i += span
    return found


def _substitutions(lines: list[str]) -> dict[str, str]:
    """``.. |name| replace:: text`` definitions anywhere in the document."""
    subs: dict[str, str] = {}
    for line in lines:
        m = _EXPLICIT.match(line)
        sub = _SUBST_DEF.match(m.group(2) or "") if m else None
        if sub and sub.group(2) == "replace":
            subs[sub.group(1)] = sub.group(3).strip()
    return subs


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _reduce_inline(text: str, subs: dict[str, str]) -> str:
    """Inline markup reduced to its visible text (roles, literals, links, emphasis, substitutions)."""
    # Literals and roles are swapped for placeholders first so that emphasis around them
    # ("**one `x` two**") is still seen, and their own text is never touched.
    kept: list[str] = []

    def hold(m: re.Match[str]) -> str:
        kept.append(_inline_text(m))
        return f"\0{len(kept) - 1}\0"

    text = _reduce_plain(_INLINE.sub(hold, text), subs)
    return re.sub(r"\0(\d+)\0", lambda m: kept[int(m.group(1))], text)


def _inline_text(m: re.Match[str]) -> str:
    if m.group("lit") is not None:
        return m.group("lit")
    if m.group("role") is not None:
        role, body = m.group("role"), m.group("roletext")
        if role in ("rfc", "pep"):
            return f"{role.upper()} {body}"
        target = _LINK_TARGET.match(body) if role in _LINK_ROLES else None
        if target:  # :ref:`shown text <label>` shows only the text
            return target.group(1) or target.group(2)
        return body.lstrip("~!")
    body = m.group("link") if m.group("link") is not None else m.group("interp")
    target = _LINK_TARGET.match(body)
    return (target.group(1) or target.group(2)) if target else body


def _reduce_plain(text: str, subs: dict[str, str]) -> str:
    text = _STRONG.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _SUBST_REF.sub(lambda m: subs.get(m.group(1), m.group(1)), text)
    return _ESCAPE.sub(r"\1", text)


class _Renderer:
    """Walks the document once, sending headings and reduced body lines to the builder."""

    def __init__(self, lines: list[str], headings: dict[int, tuple[int, str, int]], title_at: int | None,
                 subs: dict[str, str], builder: SectionBuilder) -> None:
        self.lines, self.headings, self.title_at = lines, headings, title_at
        self.subs, self.out = subs, builder
        self.pending: list[Line] = []  # prose lines of the paragraph being read

    def run(self) -> None:
        i, n = 0, len(self.lines)
        while i < n:
            line = self.lines[i]
            row = None if i in self.headings else self._grid_row(i)
            if (row is None and i not in self.headings and line.strip() and not _EXPLICIT.match(line)
                    and not _TABLE_BORDER.match(line)):
                i = self._text_line(i)
                continue
            self._flush()
            if i in self.headings:
                level, title, span = self.headings[i]
                if i != self.title_at:
                    self.out.heading(level, title)
                i += span
            elif row is not None:
                if row:
                    self.out.add(i + 1, row)
                i += 1
            elif not line.strip():
                self.out.brk(i + 1)
                i += 1
            elif m := _EXPLICIT.match(line):
                i = self._explicit(i, len(m.group(1)), (m.group(2) or "").strip())
            else:
                i += 1  # table rules and transitions carry no words
        self._flush()

    def _block_end(self, i: int, indent: int) -> int:
        """Index just past the lines indented deeper than ``indent`` that follow line i."""
        j = i + 1
        while j < len(self.lines) and j not in self.headings and (
                not self.lines[j].strip() or _indent(self.lines[j]) > indent):
            j += 1
        return j

    def _emit_literal(self, start: int, end: int) -> None:
        block = dedent([(k + 1, self.lines[k].rstrip()) for k in range(start, end)])
        self.out.brk(start + 1)
        self.out.add_many(block)
        self.out.brk(end)

    def _grid_row(self, i: int) -> str | None:
        """A grid-table row's cells joined by " | " ("" when empty); None if not a table row."""
        above = self.lines[i - 1].strip() if i else ""
        if not (above[:1] in ("+", "|") and above[-1:] in ("+", "|")):
            return None  # "|name| text" outside a table is a substitution, not a row
        row = _TABLE_ROW.match(self.lines[i])
        if row is None:
            return None
        cells = [_reduce_inline(c.strip(), self.subs) for c in row.group(1).split("|")]
        return " | ".join(c for c in cells if c)

    def _flush(self) -> None:
        """Reduce the pending paragraph as a whole: inline markup may span its lines."""
        if not self.pending:
            return
        numbers = [no for no, _ in self.pending]
        reduced = _reduce_inline("\n".join(t for _, t in self.pending), self.subs).split("\n")
        for k, text in enumerate(reduced):
            self.out.add(numbers[min(k, len(numbers) - 1)], text)
        self.pending = []

    def _text_line(self, i: int) -> int:
        line = self.lines[i]
        stripped = _LINE_BLOCK.sub(r"\1", line).strip()
        if not stripped.endswith("::"):
            self.pending.append((i + 1, stripped))
            return i + 1
        # "Text::" introduces a literal block: the marker reads as ":" (or vanishes after a space).
        head = stripped[:-2].rstrip()
        head = head if stripped[:-2].endswith((" ", ":")) or not head else head + ":"
        if head:
            self.pending.append((i + 1, head))
        self._flush()
        end = self._block_end(i, _indent(line))
        body = next((k for k in range(i + 1, end) if self.lines[k].strip()), None)
        if body is None:
            return i + 1
        self._emit_literal(body, end)
        return end

    def _explicit(self, i: int, indent: int, rest: str) -> int:
        """Handle an explicit-markup block (``..`` line); return the index to continue from."""
        end = self._block_end(i, indent)
        if rest.startswith("_") or _SUBST_DEF.match(rest):
            # Targets and substitution definitions only continue up to the next blank line: an
            # indented paragraph after that is content (FRR indents clicmd bodies after labels).
            j = i + 1
            while j < end and self.lines[j].strip():
                j += 1
            return j
        if note := _FOOTNOTE.match(rest):
            self.out.add(i + 1, f"[{note.group(1)}] {_reduce_inline(note.group(2), self.subs)}")
            return i + 1  # its indented body is ordinary text
        directive = _DIRECTIVE.match(rest)
        if directive is None:
            return end  # a comment, together with its indented continuation
        name, arg = directive.group(1).lower(), (directive.group(2) or "").strip()
        name = name.rsplit(":", 1)[-1]  # domain prefix, e.g. "rst:directive"
        if name in _DROP:
            return end
        body = i + 1
        while body < end and _OPTION_FIELD.match(self.lines[body]):
            body += 1  # directive options such as ":linenos:" are not content
        if name in _LITERAL:
            first = next((k for k in range(body, end) if self.lines[k].strip()), None)
            if first is not None:
                self._emit_literal(first, end)
            return end
        self.out.brk(i + 1)
        if name in _LABELLED:  # command syntax is kept exactly as written, on a line of its own
            label = _LABELLED[name]
            if arg:
                self.out.add(i + 1, f"{label}: {arg}" if label else arg)
            self.out.brk(i + 1)
        elif name in _ADMONITIONS:
            # The label starts a prose paragraph: an argument may wrap onto the next lines.
            label = _ADMONITION_LABEL.get(name, name.capitalize())
            sep = " " if label.endswith("version") else ": "
            self.pending.append((i + 1, f"{label}{sep}{arg}" if arg else f"{label}:"))
        elif arg and name != "figure":  # a figure's argument is an image path; its body is the caption
            self.pending.append((i + 1, arg))
        return body
