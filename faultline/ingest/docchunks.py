"""Cut documentation into section-sized chunks for `faultline ingest docs`.

The format parsers (`faultline.ingest.docformats`) give a document as sections (a heading path, body lines with
their source line numbers, markup reduced to text); this entry point cuts every section into chunks of at most
``max_chars``, at paragraph boundaries first, then at line, sentence and word boundaries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.ingest.docformats import html, jsonl, markdown, plaintext, rst
from faultline.ingest.docformats.common import Line, Section
from faultline.ingest.docformats.jsonl import BadDocRecord

__all__ = ["BadDocRecord", "Chunk", "DOC_FORMATS", "chunk_document", "detect_doc_format"]


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a document."""

    section_path: tuple[str, ...]  # headings from the document title down to this section
    text: str  # readable prose, markup reduced; never empty or whitespace-only
    start_line: int  # 1-based source line where this chunk's text starts (JSONL: the record's line)
    ordinal: int  # 0-based position within the document

    @property
    def title(self) -> str:
        """The section path as one string, e.g. ``"BGP > Route Selection"``."""
        return " > ".join(self.section_path)


_PARSERS: dict[str, Callable[[str, str], list[Section]]] = {
    "rst": rst.parse,
    "markdown": markdown.parse,
    "text": plaintext.parse,
    "html": html.parse,
    "jsonl": jsonl.parse,
}
DOC_FORMATS = tuple(_PARSERS)

_SUFFIXES = {
    ".rst": "rst",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".jsonl": "jsonl",
}


def detect_doc_format(path: Path) -> str:
    """The document format implied by the file suffix; files with no or an unknown suffix are text."""
    return _SUFFIXES.get(path.suffix.lower(), "text")


def chunk_document(text: str, *, fmt: str, doc_name: str, max_chars: int = 2000) -> list[Chunk]:
    """Split a document into chunks, one or more per section, in document order.

    ``doc_name`` is the title used when the document has none of its own. Sections without
    body text give no chunk; an empty document gives ``[]``. An unknown ``fmt`` raises
    FaultlineError; a JSONL line that is not a JSON object raises :class:`BadDocRecord`.
    """
    parser = _PARSERS.get(fmt)
    if parser is None:
        raise FaultlineError(f"unknown document format {fmt!r}", fix=f"use one of: {', '.join(DOC_FORMATS)}")
    if max_chars < 1:
        raise FaultlineError(f"max_chars must be positive, got {max_chars}", fix="pass max_chars >= 1")
    # One line-ending convention for every parser; a BOM is not content.
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    chunks: list[Chunk] = []
    for section in parser(text, doc_name):
        for start, body in _pack(section.lines, max_chars):
            chunks.append(Chunk(section.path, body, start, len(chunks)))
    return chunks


def _paragraphs(lines: list[Line]) -> list[list[Line]]:
    """Blank-line separated runs of lines, trailing spaces trimmed."""
    paras: list[list[Line]] = []
    current: list[Line] = []
    for no, text in lines:
        text = text.rstrip()
        if text.strip():
            current.append((no, text))
        elif current:
            paras.append(current)
            current = []
    if current:
        paras.append(current)
    return paras


def _pack(lines: list[Line], max_chars: int) -> list[tuple[int, str]]:
    """Greedily fill chunks with whole paragraphs, cutting only paragraphs that cannot fit."""
    out: list[tuple[int, str]] = []
    parts: list[str] = []
    start = size = 0
    for para in _paragraphs(lines):
        for piece_start, piece in _fit_paragraph(para, max_chars):
            if parts and size + 2 + len(piece) > max_chars:
                out.append((start, "\n\n".join(parts)))
                parts, size = [], 0
            if not parts:
                start, size = piece_start, len(piece)
            else:
                size += 2 + len(piece)
            parts.append(piece)
    if parts:
        out.append((start, "\n\n".join(parts)))
    return out


def _fit_paragraph(para: list[Line], max_chars: int) -> list[tuple[int, str]]:
    """A paragraph as pieces of at most max_chars: whole if it fits, else packed line by line."""
    whole = "\n".join(t for _, t in para)
    if len(whole) <= max_chars:
        return [(para[0][0], whole)]
    pieces: list[tuple[int, str]] = []
    start, buf = 0, ""
    for no, text in para:
        for part in [text] if len(text) <= max_chars else _cut_line(text, max_chars):
            if buf and len(buf) + 1 + len(part) > max_chars:
                pieces.append((start, buf))
                buf = ""
            if not buf:
                start, buf = no, part
            else:
                buf += "\n" + part
    if buf:
        pieces.append((start, buf))
    return pieces


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def _cut_line(text: str, max_chars: int) -> list[str]:
    """Cut one over-long line at sentence ends, then at spaces, then (last resort) anywhere."""
    atoms: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        if len(sentence) <= max_chars:
            atoms.append(sentence)
            continue
        for word in sentence.split():
            atoms.extend(word[i : i + max_chars] for i in range(0, len(word), max_chars))
    parts: list[str] = []
    for atom in atoms:
        if parts and len(parts[-1]) + 1 + len(atom) <= max_chars:
            parts[-1] += " " + atom
        else:
            parts.append(atom)
    return parts
