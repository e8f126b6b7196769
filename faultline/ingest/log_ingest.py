"""Preparing a log file for the ingest pipeline: lines → parsed columns (Polars)."""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl
import pyarrow as pa

from faultline.config import Settings
from faultline.ingest import store
from faultline.ingest.prepared import Prepared
from faultline.ingest.reading import RawFile, Reject, binary_reason, text_lines

LOG_COLUMNS = [
    "source_file", "line_no", "file_sha256", "format", "parsed", "ts", "host", "severity",
    "severity_raw", "component", "pid", "message", "raw", "decode_error", "incident_id", "ingested_at",
]


def _default_year(raw: RawFile, settings: Settings) -> int:
    if settings.log_default_year is not None:
        return settings.log_default_year
    try:
        return datetime.fromtimestamp(raw.path.stat().st_mtime).year
    except OSError:
        return datetime.now().year


def _resolve_format(log_format: str | None):  # -> str | LogFormat | None
    if log_format and "<" in log_format:
        from faultline.ingest.logformats import format_from_template

        return format_from_template(log_format)
    return log_format


def _write(conn: duckdb.DuckDBPyConnection, accepted: pa.Table, source_file: str) -> dict[str, int]:
    store.replace_file_rows(conn, "log_lines", source_file, accepted)
    return {"inserted": accepted.num_rows}


def prepare_logs(raw: RawFile, source_file: str, settings: Settings, *, log_format: str | None,
                 incident_id: str | None) -> Prepared:
    """Split, decode and parse a log file; a binary file is one rejected record."""
    from faultline.ingest.logformats import parse_lines

    why = binary_reason(raw.data)
    if why:
        head = raw.data[:256].hex()
        reject = Reject(0, "file_is_text", f"{raw.path.name} is not a text log: it {why}; "
                        "pass the text log (gzip is read directly)", f"first bytes (hex): {head}")
        empty = pa.table({c: pa.array([], pa.string()) for c in ("line_no", "raw")})
        return Prepared("log_lines", 1, empty, [reject], "line_no", "raw", _write, messages=[reject.reason])
    lines = text_lines(raw.data)
    fmt = _resolve_format(log_format)
    parsed = parse_lines(lines.select("line_no", "raw"), fmt=fmt, default_year=_default_year(raw, settings))
    frame = parsed.with_columns(
        lines["decode_error"], lines["raw_bytes"],
        pl.lit(source_file).alias("source_file"),
        pl.lit(raw.sha256).alias("file_sha256"),
        pl.lit(incident_id, dtype=pl.Utf8).alias("incident_id"),
        pl.lit(datetime.now().astimezone()).alias("ingested_at"),
    ).select(*LOG_COLUMNS, "raw_bytes")
    messages = []
    if frame.height:
        formats = frame.group_by("format").len().sort("len", descending=True)
        messages.append("formats: " + ", ".join(f"{f} {n}" for f, n in formats.iter_rows()))
        bad = int(frame["decode_error"].sum())
        if bad:
            messages.append(f"{bad} line(s) held bytes that are not valid UTF-8: kept, shown as \\xNN, "
                            "flagged log_lines.decode_error")
    else:
        messages.append(f"{raw.path.name} has no log lines (empty file)")
    return Prepared(
        table="log_lines", records_in=frame.height, candidates=frame.to_arrow(), rejects=[],
        record_no_column="line_no", raw_column="raw", writer=_write, drop_columns=["raw_bytes"],
        messages=messages,
    )
