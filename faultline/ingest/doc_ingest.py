"""Preparing a document for the ingest pipeline: sections → chunks."""

from __future__ import annotations

import hashlib
from datetime import datetime

import duckdb
import pyarrow as pa

from faultline.config import Settings
from faultline.ingest import store
from faultline.ingest.prepared import Prepared
from faultline.ingest.reading import RawFile, Reject, binary_reason, decode

DOC_SUFFIXES = {".rst", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".jsonl"}
_SCHEMA = pa.schema([
    ("chunk_id", pa.string()), ("doc_id", pa.string()), ("source_file", pa.string()),
    ("file_sha256", pa.string()), ("format", pa.string()), ("title", pa.string()),
    ("section_path", pa.list_(pa.string())), ("ordinal", pa.int32()), ("start_line", pa.int32()),
    ("text", pa.string()), ("ingested_at", pa.timestamp("us", tz="UTC")),
])


def _write(conn: duckdb.DuckDBPyConnection, accepted: pa.Table, source_file: str, _first: bool) -> dict[str, int]:
    store.replace_file_rows(conn, "doc_chunks", source_file, accepted)
    return {"inserted": accepted.num_rows}


def _whole_file_reject(raw: RawFile, check: str, reason: str, shown_raw: str) -> Prepared:
    empty = pa.Table.from_pylist([], schema=_SCHEMA)
    return Prepared("doc_chunks", 1, empty, [Reject(0, check, reason, shown_raw)], "start_line", "text",
                    _write, messages=[reason])


def chunk_with_rejects(text: str, fmt: str, doc_name: str, max_chars: int) -> tuple[list, list[Reject]]:
    """Chunk a document; for JSONL, each bad record is rejected and the rest still chunked."""
    from faultline.ingest.docchunks import BadDocRecord, chunk_document

    lines = text.split("\n")
    rejects: list[Reject] = []
    while True:
        try:
            return chunk_document("\n".join(lines), fmt=fmt, doc_name=doc_name, max_chars=max_chars), rejects
        except BadDocRecord as exc:
            bad = lines[exc.line_no - 1]
            rejects.append(Reject(exc.line_no, "doc_record", str(exc), bad))
            lines[exc.line_no - 1] = ""  # blank it, keeping the other records' line numbers


def prepare_docs(raw: RawFile, source_file: str, settings: Settings) -> Prepared:
    """Chunk a document by section; binary or non-UTF-8 documents are rejected whole."""
    from faultline.ingest.docchunks import detect_doc_format
    from faultline.ingest.reading import shown

    why = binary_reason(raw.data)
    if why:
        return _whole_file_reject(raw, "file_is_text", f"{raw.path.name} is not a text document: it {why}",
                                  f"first bytes (hex): {raw.data[:256].hex()}")
    text, bad = decode(raw.data)
    if bad:
        return _whole_file_reject(raw, "utf8", f"{raw.path.name} holds bytes that are not valid UTF-8; "
                                  "re-encode it (e.g. iconv -f latin1 -t utf-8) and ingest again", shown(text))
    path = raw.path.with_suffix("") if raw.path.suffix == ".gz" else raw.path
    fmt = detect_doc_format(path)
    doc_id = f"{path.parent.name}/{path.name}" if path.parent.name else path.name
    chunks, rejects = chunk_with_rejects(text, fmt, path.stem, settings.doc_chunk_chars)
    now = datetime.now().astimezone()
    rows, seen = [], {}
    for c in chunks:
        chunk_id = hashlib.sha256(f"{doc_id}|{c.title}|{c.text}".encode()).hexdigest()[:32]
        if chunk_id in seen:  # the same section text twice: keep the first, the copy is a record too
            rejects.append(Reject(c.start_line, "unique_chunk", f"identical to the chunk at line {seen[chunk_id]} "
                                  f"(same section '{c.title}' and text); the first is kept", c.text))
            continue
        seen[chunk_id] = c.start_line
        rows.append({
            "chunk_id": chunk_id, "doc_id": doc_id, "source_file": source_file, "file_sha256": raw.sha256,
            "format": fmt, "title": c.title, "section_path": list(c.section_path), "ordinal": c.ordinal,
            "start_line": c.start_line, "text": c.text, "ingested_at": now,
        })
    messages = ([f"format: {fmt}, {len(rows)} chunk(s)"] if rows or rejects
                else [f"{raw.path.name} has no text to chunk"])
    return Prepared(
        table="doc_chunks", records_in=len(rows) + len(rejects), candidates=pa.Table.from_pylist(rows, schema=_SCHEMA),
        rejects=rejects, record_no_column="start_line", raw_column="text", writer=_write, messages=messages,
    )
