"""Tests for document chunking: real FRR docs, RFCs and the FRR error catalogue, plus small fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from faultline.errors import FaultlineError
from faultline.ingest.docchunks import BadDocRecord, Chunk, chunk_document, detect_doc_format
from tests.datafiles import data_files

# paths relative to data_dir, from docs/data.md: the cases exist (and skip) without the data
FRR_RST = data_files("docs/frr/user/", ".rst") + data_files("docs/frr/manpages/", ".rst")
RFCS = data_files("docs/rfcs/", ".txt")

_FOOTER = re.compile(r"\[Page\s+[0-9ivxlc]+\]\s*$", re.I)
_RFC_HEADER = re.compile(r"^RFC \d+\s{2,}.*\s{2,}\w+ \d{4}$")


def chunk_file(path: Path, max_chars: int = 2000) -> list[Chunk]:
    return chunk_document(path.read_text(encoding="utf-8"), fmt=detect_doc_format(path), doc_name=path.stem,
                          max_chars=max_chars)


def tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def chunk_tokens(chunks: list[Chunk]) -> set[str]:
    found: set[str] = set()
    for chunk in chunks:
        found |= tokens(chunk.text) | tokens(" ".join(chunk.section_path))
    return found


@pytest.fixture
def docs(data_dir: Path) -> Path:
    """The documentation part of the data sets."""
    return data_dir / "docs"


def assert_well_formed(chunks: list[Chunk], max_chars: int = 2000) -> None:
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text.strip(), c
        assert len(c.text) <= max_chars, (c.title, len(c.text))
        assert c.start_line >= 1
        assert c.section_path and all(part.strip() for part in c.section_path)
    assert len({c.section_path[0] for c in chunks}) <= 1, "one document title per document"


# --- API basics -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "fmt"), [
    ("bgp.rst", "rst"), ("README.md", "markdown"), ("x.MARKDOWN", "markdown"), ("rfc4271.txt", "text"),
    ("notes.text", "text"), ("page.html", "html"), ("page.HTM", "html"), ("errors.jsonl", "jsonl"),
    ("Makefile", "text"), ("data.csv", "text"),
])
def test_detect_doc_format(name: str, fmt: str) -> None:
    assert detect_doc_format(Path("/somewhere") / name) == fmt


def test_unknown_format_raises_faultline_error() -> None:
    with pytest.raises(FaultlineError) as info:
        chunk_document("text", fmt="pdf", doc_name="x")
    assert "pdf" in info.value.message and info.value.fix


def test_title_joins_path() -> None:
    chunk = Chunk(("BGP", "Basic Concepts", "Route Selection"), "text", 1, 0)
    assert chunk.title == "BGP > Basic Concepts > Route Selection"


@pytest.mark.parametrize("fmt", ["rst", "markdown", "text", "html", "jsonl"])
@pytest.mark.parametrize("text", ["", "\n\n   \n", "\r\n"])
def test_empty_document_gives_no_chunks(fmt: str, text: str) -> None:
    assert chunk_document(text, fmt=fmt, doc_name="empty") == []


def test_the_manifest_lists_every_document_case() -> None:
    # an empty list would make pytest skip the parametrised tests below ("empty parameter set")
    assert len(data_files("docs/frr/user/", ".rst")) == 59 and len(data_files("docs/frr/manpages/", ".rst")) == 27
    assert len(RFCS) == 16 and "docs/rfcs/rfc4271.txt" in RFCS


@pytest.mark.data
def test_the_data_folder_holds_exactly_the_listed_documents(data_dir: Path) -> None:
    """The lists above stand in for globs over the folder: they must name the same files."""
    globs = ("docs/frr/user/*.rst", "docs/frr/manpages/*.rst", "docs/rfcs/*.txt")
    on_disk = [p.relative_to(data_dir).as_posix() for pattern in globs for p in sorted(data_dir.glob(pattern))]
    assert on_disk == FRR_RST + RFCS


# --- FRR reStructuredText -------------------------------------------------------------------


@pytest.mark.data
def test_frr_bgp_rst_sections_and_commands(docs: Path) -> None:
    chunks = chunk_file(docs / "frr" / "user" / "bgp.rst")
    assert_well_formed(chunks)
    assert {c.section_path[0] for c in chunks} == {"BGP"}
    paths = {c.section_path for c in chunks}
    assert ("BGP", "Basic Concepts", "Route Selection") in paths
    assert ("BGP", "BGP Router Configuration", "Route Selection") in paths
    assert ("BGP", "BGP Router Configuration", "Peers", "Defining Peers") in paths
    assert ("BGP", "Starting BGP") in paths
    texts = "\n".join(c.text for c in chunks)
    assert "Command: router bgp ASN" in texts
    assert "Command: bgp router-id A.B.C.D" in texts
    asn = next(c for c in chunks if "Command: router bgp ASN" in c.text)
    assert asn.section_path == ("BGP", "BGP Router Configuration", "ASN and Router ID")
    for leak in (".. clicmd::", ":clicmd:`", ".. index::", ".. _", ":ref:`", ".. code-block::", ":rfc:`"):
        assert leak not in texts, leak
    # An inline :rfc: role reads as "RFC nnnn"; the labelled target of a :ref: is dropped.
    assert "described in RFC 1771 and updated by\nRFC 4271" in texts


@pytest.mark.data
def test_frr_every_clicmd_is_kept(data_dir: Path) -> None:
    source_commands = 0
    chunk_commands: list[str] = []
    for path in (data_dir / rel for rel in FRR_RST):
        text = path.read_text(encoding="utf-8")
        source_commands += len(re.findall(r"^\s*\.\. clicmd::", text, re.M))
        chunk_commands += [line for c in chunk_file(path) for line in c.text.split("\n")
                           if line.startswith("Command: ")]
    assert source_commands == 1875 == len(chunk_commands)


@pytest.mark.data
@pytest.mark.parametrize("rel", FRR_RST, ids=lambda rel: rel.removeprefix("docs/frr/"))
def test_every_frr_rst_file_chunks(data_dir: Path, rel: str) -> None:
    path = data_dir / rel
    chunks = chunk_file(path)
    assert_well_formed(chunks)
    for c in chunks:
        assert not re.search(r"^\s*\.\. [\w-]+::", c.text, re.M), (c.title, c.text[:200])
    # Start lines point at the source: the first word of a chunk is on that line
    # (substitutions such as |DAEMON| are the expected exception).
    lines = path.read_text(encoding="utf-8").split("\n")
    for c in chunks:
        words = [w for w in re.findall(r"[A-Za-z0-9]+", c.text.split("\n")[0]) if w not in ("Command", "Option")]
        if words and "|" not in lines[c.start_line - 1]:
            assert words[0].lower() in lines[c.start_line - 1].lower(), (path.name, c.start_line, c.text[:80])


_DROPPED_BLOCKS = ("index", "toctree", "include", "image", "figure", "program", "role")


def _rst_content_tokens(text: str) -> set[str]:
    """Source tokens after removing markup: explicit-markup lines (with the bodies of comments and
    dropped directives), role names, link targets and directive options."""
    kept: list[str] = []
    skip_deeper_than: int | None = None
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip())
        if skip_deeper_than is not None and (not line.strip() or indent > skip_deeper_than):
            continue
        skip_deeper_than = None
        m = re.match(r"^(\s*)\.\.(?:\s+(\S+))?", line)
        if m:
            word = m.group(2) or ""
            if not word.endswith("::") or word[:-2] in _DROPPED_BLOCKS:
                skip_deeper_than = len(m.group(1))
            continue
        kept.append(line)
    body = re.sub(r"^\s+:[\w-]+:.*$", "", "\n".join(kept), flags=re.M)
    body = re.sub(r":[\w:-]+:`", "`", body)
    body = re.sub(r"<[^<>`\n]*>`_*", "`", body)
    return tokens(body)


@pytest.mark.data
@pytest.mark.parametrize("name", ["user/bgp.rst", "user/zebra.rst", "user/ospfd.rst", "user/about.rst",
                                  "manpages/frr-bgpd.rst"])
def test_frr_rst_content_is_preserved(docs: Path, name: str) -> None:
    path = docs / "frr" / name
    chunks = chunk_file(path)
    source = _rst_content_tokens(path.read_text(encoding="utf-8"))
    missing = source - chunk_tokens(chunks)
    # Tolerated: headings of empty sections (they give no chunk) and a few words the crude
    # markup stripping above cannot tell apart (e.g. the names of substitutions).
    assert len(missing) <= max(3, len(source) // 100), sorted(missing)


# --- RFCs -----------------------------------------------------------------------------------


@pytest.mark.data
def test_rfc4271_title_sections_and_no_page_furniture(docs: Path) -> None:
    chunks = chunk_file(docs / "rfcs" / "rfc4271.txt")
    assert_well_formed(chunks)
    assert chunks[0].section_path[0] == "A Border Gateway Protocol 4 (BGP-4)"
    open_msg = [c for c in chunks if c.section_path[-1] == "4.2 OPEN Message Format"]
    assert open_msg and open_msg[0].section_path == (
        "A Border Gateway Protocol 4 (BGP-4)", "4 Message Formats", "4.2 OPEN Message Format")
    assert "the first message sent by each\nside is an OPEN message" in open_msg[0].text
    paths = {c.section_path[1:] for c in chunks}
    assert ("5 Path Attributes", "5.1 Path Attribute Usage", "5.1.3 NEXT_HOP") in paths
    assert ("Appendix F Implementation Recommendations", "Appendix F.2 Reducing Route Flapping") in paths
    assert ("Abstract",) in paths
    for c in chunks:
        assert "\f" not in c.text
        for line in c.text.split("\n"):
            assert not _FOOTER.search(line) and not _RFC_HEADER.match(line.strip()), line


@pytest.mark.data
def test_rfc_text_is_joined_across_page_breaks(docs: Path) -> None:
    """A sentence cut by a page break reads on in one chunk, with the furniture gone."""
    path = docs / "rfcs" / "rfc4271.txt"
    lines = path.read_text(encoding="utf-8").split("\n")
    chunk_lines = [[line.strip() for line in c.text.split("\n")] for c in chunk_file(path)]
    checked = 0
    for k, line in enumerate(lines):
        if "\f" not in line:
            continue
        before = next((t for t in reversed(lines[:k]) if t.strip() and not _FOOTER.search(t)), "")
        after = next((t for t in lines[k + 1:] if t.strip() and not _RFC_HEADER.match(t.strip())), "")
        if not before or not after or before.rstrip().endswith((".", ":", ";")) or not after[:1].isspace():
            continue  # the page ended a paragraph too
        pair = [before.strip(), after.strip()]
        assert any(body[i:i + 2] == pair for body in chunk_lines for i in range(len(body) - 1)), pair
        checked += 1
    assert checked > 20


@pytest.mark.data
@pytest.mark.parametrize("rel", RFCS, ids=lambda rel: Path(rel).name)
def test_every_rfc_chunks_without_furniture_and_keeps_its_words(data_dir: Path, rel: str) -> None:
    path = data_dir / rel
    chunks = chunk_file(path)
    assert_well_formed(chunks)
    assert len({c.section_path for c in chunks}) > 5, "numbered or named sections are found"
    assert chunks[0].section_path[0] != path.stem, "the RFC's own title is used"
    for c in chunks:
        for line in c.text.split("\n"):
            assert not _FOOTER.search(line), (path.name, line)
    raw = path.read_text(encoding="utf-8")
    content = tokens("\n".join(t for t in raw.split("\n")
                               if not _FOOTER.search(t) and not _RFC_HEADER.match(t.strip())))
    missing = content - chunk_tokens(chunks)
    # Tolerated: running headers of old RFCs that do not follow the "RFC nnnn ... Month Year" form.
    assert len(missing) <= 3, sorted(missing)


@pytest.mark.data
@pytest.mark.parametrize(("name", "title", "section"), [
    ("rfc2328.txt", "OSPF Version 2", ("1 Introduction", "1.1 Protocol overview")),
    ("rfc791.txt", "INTERNET PROTOCOL", ("3 SPECIFICATION", "3.1 Internet Header Format")),
    ("rfc792.txt", "INTERNET CONTROL MESSAGE PROTOCOL", ("Destination Unreachable Message",)),
    ("rfc1034.txt", "DOMAIN NAMES - CONCEPTS AND FACILITIES",
     ("4 NAME SERVERS", "4.3 Name server internals", "4.3.2 Algorithm")),
])
def test_rfc_heading_styles(docs: Path, name: str, title: str, section: tuple[str, ...]) -> None:
    chunks = chunk_file(docs / "rfcs" / name)
    assert chunks[0].section_path[0] == title
    assert (title, *section) in {c.section_path for c in chunks}


# --- FRR error catalogue (JSONL) --------------------------------------------------------------


@pytest.mark.data
def test_frr_errors_one_chunk_per_record(docs: Path) -> None:
    errors = docs / "frr_errors.jsonl"
    chunks = chunk_file(errors)
    records = [json.loads(line) for line in errors.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(chunks) == len(records) == 343
    assert_well_formed(chunks)
    first = chunks[0]
    assert first.section_path == ("frr_errors", "EC 16777217 EC_BABEL_MEMORY: BABEL Memory Errors")
    assert "code: 16777217" in first.text
    assert records[0]["suggestion"] in first.text
    assert first.start_line == 1
    socket = next(c for c in chunks if "100663299" in c.text)
    assert socket.title == "frr_errors > EC 100663299 EC_LIB_SOCKET: Socket Error"
    assert "sufficient system resources" in socket.text and "source_file: lib/lib_errors.c" in socket.text
    assert socket.start_line == 134


def test_jsonl_generic_fields_and_bad_lines() -> None:
    text = '{"id": "KB-7", "summary": "Flapping link", "body": "Check optics", "tags": ["l1", "optics"]}\n\n'
    text += '{"note": "no title fields"}\n'
    chunks = chunk_document(text, fmt="jsonl", doc_name="kb")
    assert [c.section_path for c in chunks] == [("kb", "KB-7: Flapping link"), ("kb", "record 3")]
    assert chunks[0].text == "id: KB-7\nbody: Check optics\ntags: l1, optics"
    assert chunks[1].start_line == 3
    with pytest.raises(BadDocRecord) as info:
        chunk_document('{"a": 1}\n\n{"b": 2}\n[1, 2]\n', fmt="jsonl", doc_name="kb")
    assert info.value.line_no == 4 and "line 4" in str(info.value)
    with pytest.raises(ValueError) as bad_json:
        chunk_document('{"a": 1}\n{"b": \n', fmt="jsonl", doc_name="kb")
    assert isinstance(bad_json.value, BadDocRecord) and bad_json.value.line_no == 2


# --- small fixtures ---------------------------------------------------------------------------


RST_FIXTURE = """\
.. _top:

=========
Guide
=========

.. index:: guide

Intro with :ref:`a link <some-label>`, ``literal``, *emphasis* and |NAME|.

.. |NAME| replace:: FRRouting

Setup
-----

.. include:: other.rst

.. clicmd:: show ip route [json]

   Shows routes; see :clicmd:`show ip fib`.

   .. note::

      Needs zebra.

Example::

   # this is code
   router bgp 65000

..
   A comment that must vanish.

.. code-block:: shell
   :linenos:

   vtysh -c 'show run'

Empty
-----

Deeper
^^^^^^

Last words.
"""


def test_rst_fixture() -> None:
    chunks = chunk_document(RST_FIXTURE, fmt="rst", doc_name="fallback")
    assert [c.section_path for c in chunks] == [("Guide",), ("Guide", "Setup"), ("Guide", "Empty", "Deeper")]
    assert chunks[0].text == "Intro with a link, literal, emphasis and FRRouting."
    setup = chunks[1].text
    assert "Command: show ip route [json]" in setup
    assert "Shows routes; see show ip fib." in setup
    assert "Note:\n\nNeeds zebra." in setup
    assert "Example:\n\n# this is code\nrouter bgp 65000" in setup
    assert "vtysh -c 'show run'" in setup
    for gone in ("comment", "other.rst", "index", "linenos", "some-label", ".."):
        assert gone not in setup and gone not in chunks[0].text
    assert chunks[1].start_line == 18 and chunks[2].start_line == 45


def test_rst_without_single_title_uses_doc_name() -> None:
    text = "One\n===\n\nfirst\n\nTwo\n===\n\nsecond\n"
    chunks = chunk_document(text, fmt="rst", doc_name="common-options")
    assert [c.section_path for c in chunks] == [("common-options", "One"), ("common-options", "Two")]


MARKDOWN_FIXTURE = """\
# Runbook

Intro with a [link](https://example.org/x) and **bold** `code`.

## Steps

```sh
# restart the daemon -- not a heading
systemctl restart frr
```

Checks
------

- [x] item with ![diagram](d.png)

| col | val |
|-----|-----|
| mtu | 9000 |

## Empty section

### Tail
done
"""


def test_markdown_fixture() -> None:
    chunks = chunk_document(MARKDOWN_FIXTURE, fmt="markdown", doc_name="runbook")
    assert [c.section_path for c in chunks] == [
        ("Runbook",), ("Runbook", "Steps"), ("Runbook", "Checks"), ("Runbook", "Empty section", "Tail")]
    assert chunks[0].text == "Intro with a link and bold code."
    assert chunks[1].text == "# restart the daemon -- not a heading\nsystemctl restart frr"
    assert chunks[1].start_line == 8
    assert "diagram" in chunks[2].text and "col | val\nmtu | 9000" in chunks[2].text
    assert chunk_document("no headings here", fmt="markdown", doc_name="notes")[0].section_path == ("notes",)


HTML_FIXTURE = """\
<!doctype html>
<html><head><title>Ops Manual</title>
<style>p { color: red }</style><script>var secret = 1;</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Ops Manual</h1>
<p>First   paragraph
with <b>bold</b> &amp; an entity.</p>
<h2>Limits</h2>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>mtu</td><td>9000</td></tr></table>
<ul><li>one</li><li>two</li></ul>
<h3>Commands</h3>
<pre>show ip bgp
  summary</pre>
<h2>Empty</h2>
</body></html>
"""


def test_html_fixture() -> None:
    chunks = chunk_document(HTML_FIXTURE, fmt="html", doc_name="page")
    assert [c.section_path for c in chunks] == [
        ("Ops Manual",), ("Ops Manual", "Limits"), ("Ops Manual", "Limits", "Commands")]
    assert chunks[0].text == "First paragraph with bold & an entity."
    assert chunks[0].start_line == 7
    assert chunks[1].text == "Name | Value\nmtu | 9000\n\n- one\n- two"
    assert chunks[2].text == "show ip bgp\n  summary"
    joined = " ".join(c.text for c in chunks)
    assert "secret" not in joined and "Home" not in joined and "color" not in joined


def test_html_without_title_uses_first_h1_then_doc_name() -> None:
    chunks = chunk_document("<h1>Top</h1><p>a</p><h2>Sub</h2><p>b</p>", fmt="html", doc_name="x")
    assert [c.section_path for c in chunks] == [("Top",), ("Top", "Sub")]
    assert chunk_document("<p>just text</p>", fmt="html", doc_name="x")[0].section_path == ("x",)


def test_plain_text_and_size_splitting() -> None:
    paragraph = " ".join(f"Sentence number {i} is here." for i in range(40))
    text = "Short intro.\n\n" + paragraph + "\n\n" + "\n".join(f"line {i} of a list" for i in range(60))
    chunks = chunk_document(text, fmt="text", doc_name="notes", max_chars=300)
    assert_well_formed(chunks, max_chars=300)
    assert {c.section_path for c in chunks} == {("notes",)}
    # The long paragraph does not fit beside the intro, so it starts a chunk of its own.
    assert chunks[0].text == "Short intro."
    assert chunks[1].text.startswith("Sentence number 0 is here.")
    # Nothing is lost or duplicated when paragraphs, lines and sentences are cut.
    assert re.sub(r"\s+", " ", " ".join(c.text for c in chunks)) == re.sub(r"\s+", " ", text).strip()
    # Cuts fall on sentence ends, never inside a sentence.
    assert all(c.text.rstrip().endswith((".", "list")) for c in chunks)
    assert chunks[-1].start_line > 3


def test_tiny_sections_are_not_merged() -> None:
    text = "# Doc\n\n## A\nx\n\n## B\ny\n"
    chunks = chunk_document(text, fmt="markdown", doc_name="d")
    assert [(c.section_path[-1], c.text) for c in chunks] == [("A", "x"), ("B", "y")]


RFC_FIXTURE = """\
Network Working Group                                          A. Author
Request for Comments: 9999                                   Example Org
Category: Informational                                     January 2030


                          A Tiny Test Protocol

Abstract

   This memo describes nothing at all.

1.  Introduction

   The protocol starts here and the sentence continues on the

Author                        Informational                     [Page 1]
\f
RFC 9999                    Tiny Test Protocol              January 2030


   next page after the break.

   Second page text goes here.

1.1.  Details

   Detail text.

2.  Operation

   Operation text.

Author                        Informational                     [Page 2]
\f
RFC 9999                    Tiny Test Protocol              January 2030


Appendix A.  Extras

   Extra text.
"""


def test_rfc_style_fixture() -> None:
    chunks = chunk_document(RFC_FIXTURE, fmt="text", doc_name="rfc9999")
    title = "A Tiny Test Protocol"
    assert [c.section_path for c in chunks] == [
        (title,), (title, "Abstract"), (title, "1 Introduction"), (title, "1 Introduction", "1.1 Details"),
        (title, "2 Operation"), (title, "Appendix A Extras")]
    intro = chunks[2].text
    assert intro == ("The protocol starts here and the sentence continues on the\n"
                     "next page after the break.\n\nSecond page text goes here.")
    assert chunks[2].start_line == 14
    joined = "\n".join(c.text for c in chunks)
    assert "[Page" not in joined and "RFC 9999   " not in joined and "Tiny Test Protocol" not in joined
