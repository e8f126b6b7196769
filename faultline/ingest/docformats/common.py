"""Pieces every format parser shares: body lines grouped under a heading path.

A parser turns a document into :class:`Section` objects: the heading path and the body lines
(with their 1-based source line numbers) that belong to it. Cutting sections into size-bounded
chunks is done once, in :mod:`faultline.ingest.docchunks`, for every format alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# One body line: (1-based source line number, text). Text "" marks a paragraph break.
Line = tuple[int, str]

_SPACES = re.compile(r"\s+")


@dataclass
class Section:
    """A heading path and the body lines that sit under it (before the next heading)."""

    path: tuple[str, ...]
    lines: list[Line] = field(default_factory=list)


def clean_title(text: str) -> str:
    """A heading as one line with single spaces."""
    return _SPACES.sub(" ", text).strip()


def first_heading_is_title(levels: list[int]) -> bool:
    """Whether the first heading names the whole document.

    It does when it sits at the shallowest level and no other heading shares that level;
    fragments with several top-level headings (FRR's included ``common-options.rst``) have no
    single title, so the caller's fallback name is used and every heading nests beneath it.
    """
    if not levels:
        return False
    top = min(levels)
    return levels[0] == top and levels.count(top) == 1


def dedent(lines: list[Line]) -> list[Line]:
    """Remove the indentation all non-blank lines share, keeping relative indentation."""
    widths = [len(t) - len(t.lstrip()) for _, t in lines if t.strip()]
    cut = min(widths, default=0)
    return [(no, t[cut:] if t.strip() else "") for no, t in lines]


class SectionBuilder:
    """Collects body lines under a heading path that follows the heading levels seen so far."""

    def __init__(self, doc_title: str) -> None:
        self.doc_title = doc_title
        self._stack: list[tuple[int, str]] = []
        self.sections: list[Section] = [Section((doc_title,))]

    def heading(self, level: int, title: str) -> None:
        """Start a section; deeper numbers are deeper levels, any integers will do."""
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, clean_title(title)))
        self.sections.append(Section((self.doc_title, *(t for _, t in self._stack))))

    def add(self, line_no: int, text: str) -> None:
        """Append one body line (an empty string is a paragraph break)."""
        self.sections[-1].lines.append((line_no, text))

    def add_many(self, lines: list[Line]) -> None:
        """Append body lines as they are."""
        self.sections[-1].lines.extend(lines)

    def brk(self, line_no: int = 0) -> None:
        """End the current paragraph."""
        self.sections[-1].lines.append((line_no, ""))
