"""Plain text, with special care for IETF RFCs.

RFC page furniture (form feeds, running headers and ``[Page N]`` footers) is removed and the text
is joined across the page break. Numbered headings (``4.2.  OPEN Message Format``,
``Appendix A.``, ``A.3.1``) define the section tree; the centred title on the first page is the
document title. Text without recognisable headings is one section named after the document.
"""

from __future__ import annotations

import re
from collections import Counter

from faultline.ingest.docformats.common import Line, Section, SectionBuilder, clean_title, dedent

_FOOTER = re.compile(r"^(?:.*\S\s{2,})?\[Page\s+[0-9ivxlcdm]+\]$", re.I)
_MONTH_YEAR = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{4}"
_HEADER = re.compile(rf"^RFC\s*:?\s*\d+(?:\s{{2,}}.*)?$|^RFC\s+\d+\s.*\s{_MONTH_YEAR}$|^{_MONTH_YEAR}$")
_RFC_FRONT = re.compile(r"^(?:Request for Comments|RFC)\s*:?\s*\d+", re.I | re.M)
_FRONT_STOP = {"abstract", "status of this memo", "copyright notice", "table of contents", "introduction"}

_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)(\.?)\s+(\S.*)$")
_LETTERED = re.compile(r"^([A-Z](?:\.\d+)*)(\.?)\s+(\S.*)$")
_APPENDIX = re.compile(r"^(?:APPENDIX|Appendix)\s+([A-Z](?:\.\d+)*)\.?(?:\s*[:-]+)?(?:\s+(\S.*))?$")
_TOC_LINE = re.compile(r"(?:\.\s?){4,}|\s{2,}\d+$")
_UNDERLINE = re.compile(r"^([-=~*])\1{2,}\s*$")
_SENTENCE_END = (".", ":", ";", "!", "?")
_BACK_MATTER = {"acknowledgements", "acknowledgments", "acknowledgement", "acknowledgment", "references",
                "normative references", "informative references", "security considerations",
                "iana considerations", "contributors", "index", "authors' addresses", "author's address",
                "authors addresses", "editor's address", "editors' addresses", "full copyright statement",
                "intellectual property", "intellectual property statement", "copyright notice"}


def parse(text: str, doc_name: str) -> list[Section]:
    """Sections of a plain-text document (RFC-aware)."""
    # Only spaces are trimmed here: str.rstrip() would also eat the form feeds that mark pages.
    raw = [line.expandtabs(8).rstrip(" ") for line in text.split("\n")]
    lines = _unpaginate(raw)
    title = ""
    if _RFC_FRONT.search("\n".join(raw[:60])):
        title, lines = _take_title(lines)
    builder = SectionBuilder(title or doc_name)
    _Headings(lines, rfc_like=bool(title)).emit(builder)
    for section in builder.sections:
        section.lines = _dedent_paragraphs(section.lines)
    return builder.sections


def _unpaginate(raw: list[str]) -> list[Line]:
    """Lines without page furniture; text split by a page break is joined back together."""
    entries: list[tuple[int, str, bool]] = []  # (line number, text, is_page_break)
    for no, line in enumerate(raw, start=1):
        parts = line.split("\f")
        for k, part in enumerate(parts):
            if k:
                entries.append((no, "", True))
            if part.strip() or (k == 0 and len(parts) == 1):
                entries.append((no, part.rstrip(), False))
    furniture = _furniture(entries)
    out: list[Line] = []
    after_break = False
    for k, (no, text, is_break) in enumerate(entries):
        if k in furniture:
            continue
        if is_break:
            while out and not out[-1][1].strip():
                out.pop()
            after_break = True
            continue
        if after_break:
            if not text.strip():
                continue
            after_break = False
            previous = out[-1][1].rstrip() if out else ""
            # Keep a paragraph break only where the page ended one (or a heading starts);
            # otherwise the sentence simply continues on the next page.
            if previous.endswith(_SENTENCE_END) or not text[:1].isspace():
                out.append((no, ""))
        out.append((no, text))
    return out


def _furniture(entries: list[tuple[int, str, bool]]) -> set[int]:
    """Indexes of running headers and page footers."""
    found = {k for k, (_, text, brk) in enumerate(entries) if not brk and _FOOTER.match(text.strip())}
    blocks: list[list[int]] = []
    for k, (_, _, brk) in enumerate(entries):
        if not brk:
            continue
        j = k + 1
        while j < len(entries) and j <= k + 2 and not entries[j][1].strip() and not entries[j][2]:
            j += 1
        block: list[int] = []
        while j < len(entries) and len(block) < 3 and entries[j][1].strip() and not entries[j][2]:
            block.append(j)
            j += 1
        blocks.append(block)
    key = {k: clean_title(entries[k][1]) for block in blocks for k in block}
    counts = Counter(key.values())
    for k, norm in key.items():
        # A running header repeats on many pages; diagram rules without words never count.
        if re.search(r"[A-Za-z0-9]", norm) and (counts[norm] >= 2 or _HEADER.match(norm)):
            found.add(k)
    return found


def _centred(line: str) -> bool:
    lead, right = len(line) - len(line.lstrip()), 72 - len(line)
    return lead >= 3 and right >= 3 and abs(lead - right) <= 12 and not re.search(r"\S\s{3,}\S", line)


def _take_title(lines: list[Line]) -> tuple[str, list[Line]]:
    """The RFC's centred title lines (first centred block of the front page), removed from the body."""
    k = 0
    while k < len(lines) and k < 120:
        text = lines[k][1]
        if clean_title(text).lower().rstrip(":") in _FRONT_STOP or _NUMBERED.match(text):
            break
        if text.strip() and _centred(text) and (k == 0 or not lines[k - 1][1].strip()):
            end = k
            while end < len(lines) and lines[end][1].strip() and _centred(lines[end][1]):
                end += 1
            if end < len(lines) and lines[end][1].strip():
                k = end  # part of a bigger block (not a title on its own)
                continue
            title = clean_title(" ".join(t for _, t in lines[k:end]))
            return title, lines[:k] + lines[end:]
        k += 1
    return "", lines


class _Headings:
    """Finds section headings in unpaginated lines and feeds everything to a SectionBuilder."""

    def __init__(self, lines: list[Line], *, rfc_like: bool) -> None:
        self.lines = lines
        body = [t for _, t in lines if t.strip() and not _NUMBERED.match(t) and not _APPENDIX.match(t)]
        indented = sum(1 for t in body if t[0].isspace())
        # Unnumbered headings ("Abstract", "Security Considerations") are only trusted in RFCs
        # whose prose is indented, so that a column-0 line really stands out.
        self.unnumbered = rfc_like and bool(body) and indented / len(body) > 0.6
        self.last_key: tuple[int, ...] | None = None
        self.underlines: list[str] = []

    def emit(self, builder: SectionBuilder) -> None:
        skip_next = False
        for k, (no, text) in enumerate(self.lines):
            if skip_next:
                skip_next = False
                continue
            prev_blank = k == 0 or not self.lines[k - 1][1].strip()
            nxt = self.lines[k + 1][1] if k + 1 < len(self.lines) else ""
            found = self._heading(text, nxt) if prev_blank and text.strip() else None
            if found is None:
                builder.add(no, text)
                continue
            level, title, underlined = found
            builder.heading(level, title)
            skip_next = underlined

    def _heading(self, text: str, nxt: str) -> tuple[int, str, bool] | None:
        stripped = text.strip()
        if len(stripped) > 90 or _TOC_LINE.search(stripped):
            return None
        numbered = self._numbered(text)
        if numbered is not None:
            return numbered
        if text[0].isspace():
            return None
        under = _UNDERLINE.match(nxt)
        if under and len(nxt.strip()) >= len(stripped) // 2:
            char = under.group(1)
            if char not in self.underlines:
                self.underlines.append(char)
            return 1 + self.underlines.index(char), stripped, True
        # Once numbered sections have begun, only the usual unnumbered back matter counts.
        late = self.last_key is not None and stripped.lower().rstrip(":") not in _BACK_MATTER
        if (self.unnumbered and not late and stripped[0].isupper() and len(stripped) <= 70
                and not stripped.endswith((".", ",", ";")) and not re.search(r"\S\s{3,}\S", stripped)
                and (not nxt.strip() or nxt[0].isspace())):
            return 1, stripped, False
        return None

    def _numbered(self, text: str) -> tuple[int, str, bool] | None:
        """``4.2.  Title``, ``A.3 Title``, ``Appendix B.  Title``, accepted only in increasing order."""
        stripped = text.strip()
        indent = len(text) - len(stripped)
        # Headings start at column 0, except RFC 791's centred chapter titles and RFC 2328's
        # subsections ("    1.1.  Protocol overview"); multi-part numbers are rare in lists.
        if indent and not (_centred(text) and stripped.upper() == stripped) and not (
                indent <= 4 and re.match(r"\d+\.\d+", stripped)):
            return None
        label = ""
        if m := _APPENDIX.match(stripped):
            label, number, rest = f"Appendix {m.group(1)}", m.group(1), m.group(2) or ""
        elif (m := _NUMBERED.match(stripped) or _LETTERED.match(stripped)) and (m.group(2) or "." in m.group(1)):
            number, rest = m.group(1), m.group(3)
            label = number
        else:
            return None
        if rest and not rest[0].isalpha():
            return None
        parts = number.split(".")
        key = tuple([1000 + ord(parts[0]) - ord("A")] if parts[0].isalpha() else [int(parts[0])])
        key += tuple(int(p) for p in parts[1:])
        last = self.last_key
        if last is not None and key <= last:
            return None
        top_limit = (last[0] + (1 if key[0] >= 1000 and last[0] >= 1000 else 2)) if last else 3
        if key[0] >= 1000 and (last is None or last[0] < 1000):
            top_limit = 1000  # appendices start at A
        if key[0] > top_limit:
            return None
        self.last_key = key
        return len(parts), clean_title(f"{label} {rest.rstrip('.')}"), False


def _dedent_paragraphs(lines: list[Line]) -> list[Line]:
    """Strip each paragraph's shared indentation (RFC prose is indented by three spaces)."""
    out: list[Line] = []
    para: list[Line] = []
    for no, text in [*lines, (0, "")]:
        if text.strip():
            para.append((no, text))
            continue
        out.extend(dedent(para))
        para = []
        out.append((no, ""))
    return out[:-1] if out else out
