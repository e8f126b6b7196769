"""Reading ticket records from JSONL, JSON, CSV and Parquet files, one result per record.

Every record read becomes either a dict or a Reject (never silently skipped), so the caller's
count of accepted + quarantined always equals the records in the file.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

from faultline.errors import FaultlineError
from faultline.ingest.reading import RawFile, Reject, binary_reason, decode, has_invalid_utf8, shown

TICKET_SUFFIXES = {".jsonl", ".ndjson", ".json", ".csv", ".parquet"}


@dataclass(frozen=True)
class SourceRecord:
    """One record of a ticket file: its number, raw text, and parsed object (or rejection)."""

    record_no: int
    raw: str
    data: dict[str, Any] | None
    reject: Reject | None = None


def _suffix(raw: RawFile) -> str:
    suffixes = [s for s in raw.path.suffixes if s != ".gz"]
    return suffixes[-1].lower() if suffixes else ""


def read_ticket_records(raw: RawFile, max_record_bytes: int) -> list[SourceRecord]:
    """Parse the file into records according to its suffix."""
    suffix = _suffix(raw)
    if suffix == ".parquet":
        return _parquet(raw)
    why = binary_reason(raw.data)
    if why:
        return [_file_reject(raw, "file_is_text", f"{raw.path.name} is not a text ticket export: it {why}")]
    if suffix in (".jsonl", ".ndjson"):
        return _jsonl(raw, max_record_bytes)
    if suffix == ".json":
        return _json(raw, max_record_bytes)
    if suffix == ".csv":
        return _csv(raw)
    raise FaultlineError(
        f"{raw.path} has an unknown ticket file type '{suffix or '(none)'}'",
        fix=f"give tickets as one of {', '.join(sorted(TICKET_SUFFIXES))}",
    )


def _file_reject(raw: RawFile, check: str, reason: str) -> SourceRecord:
    head = raw.data[:256].hex()
    return SourceRecord(0, head, None, Reject(0, check, reason, f"first bytes (hex): {head}"))


def _object_or_reject(record_no: int, text: str, max_bytes: int) -> SourceRecord:
    shown_text = shown(text)
    if len(text.encode("utf-8", "surrogateescape")) > max_bytes:
        return SourceRecord(record_no, shown_text, None, Reject(
            record_no, "record_size", f"record is larger than FAULTLINE_MAX_RECORD_BYTES ({max_bytes} bytes)",
            shown_text))
    if has_invalid_utf8(text):
        return SourceRecord(record_no, shown_text, None, Reject(
            record_no, "utf8", "record holds bytes that are not valid UTF-8; re-encode the export as UTF-8 "
            "(e.g. iconv -f latin1 -t utf-8)", shown_text))
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return SourceRecord(record_no, shown_text, None, Reject(
            record_no, "json", f"not valid JSON ({exc.msg} at column {exc.colno}); the line may be truncated",
            shown_text))
    if not isinstance(obj, dict):
        return SourceRecord(record_no, shown_text, None, Reject(
            record_no, "json_object", f"expected a JSON object per record, got {type(obj).__name__}", shown_text))
    return SourceRecord(record_no, shown_text, obj)


def _jsonl(raw: RawFile, max_bytes: int) -> list[SourceRecord]:
    text, _ = decode(raw.data)
    records = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            records.append(_object_or_reject(line_no, line.rstrip("\r"), max_bytes))
    return records


def _json(raw: RawFile, max_bytes: int) -> list[SourceRecord]:
    text, bad = decode(raw.data)
    if bad:
        return [_file_reject(raw, "utf8",
                             f"{raw.path.name} holds bytes that are not valid UTF-8; re-encode it as UTF-8")]
    try:
        doc = json.loads(text) if text.strip() else []
    except json.JSONDecodeError as exc:
        return [SourceRecord(0, shown(text[:2000]), None, Reject(
            0, "json", f"{raw.path.name} is not valid JSON ({exc.msg} at line {exc.lineno}); "
            "for one object per line use a .jsonl file", shown(text)))]
    items = doc.get("issues", doc.get("tickets")) if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        items = [doc]
    return [_object_or_reject(i, json.dumps(item, ensure_ascii=False), max_bytes)
            for i, item in enumerate(items, start=1)]


def _csv(raw: RawFile) -> list[SourceRecord]:
    text, _ = decode(raw.data)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return []
    records = []
    for row_no, row in enumerate(reader, start=1):
        if not any(cell.strip() for cell in row):
            continue
        raw_text = shown(",".join(row))
        if len(row) != len(header):
            records.append(SourceRecord(row_no, raw_text, None, Reject(
                row_no, "csv_columns", f"row has {len(row)} fields but the header has {len(header)}", raw_text)))
        elif any(has_invalid_utf8(cell) for cell in row):
            records.append(SourceRecord(row_no, raw_text, None, Reject(
                row_no, "utf8", "row holds bytes that are not valid UTF-8; re-encode the export as UTF-8", raw_text)))
        else:
            records.append(SourceRecord(row_no, raw_text, {h: (c if c != "" else None) for h, c in zip(header, row)}))
    return records


def _parquet(raw: RawFile) -> list[SourceRecord]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(raw.data))
    except (pa.ArrowInvalid, OSError) as exc:
        return [_file_reject(raw, "parquet", f"{raw.path.name} is not a readable Parquet file: {exc}")]
    rows = table.to_pylist()
    return [SourceRecord(i, json.dumps(r, default=str, ensure_ascii=False), r) for i, r in enumerate(rows, start=1)]
