"""Preparing a log file for the ingest pipeline: lines → parsed columns (Polars), in batches.

A log file is streamed a block at a time (split at line ends, gzip decompressed on the fly), so
memory follows the batch size rather than the file size. The format is detected once, on the first
block, and applied to the whole file.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from faultline.config import Settings
from faultline.ingest import store
from faultline.ingest.logdevice import device_expr
from faultline.ingest.logtime import YearCarry, roll_over_new_years
from faultline.ingest.logyear import (
    YearChoice,
    needs_year,
    rotated_back,
    year_from_layout,
    year_from_mtime,
    year_from_tickets,
)
from faultline.ingest.prepared import Prepared
from faultline.ingest.reading import FileIdentity, Reject, binary_reason, line_blocks, text_lines

LOG_COLUMNS = [
    "source_file", "line_no", "file_sha256", "format", "parsed", "ts", "host", "severity",
    "severity_raw", "component", "pid", "message", "raw", "decode_error", "incident_id", "ingested_at",
    "device",
]
BATCH_BYTES = 16 * 1024 * 1024


def default_year(path: Path, settings: Settings) -> int:
    """Year for year-less timestamps of a file read on its own: the setting, else the year the file was last
    modified (the ingest also reads the archive's layout and the tickets: `parse_first_batch`)."""
    if settings.log_default_year is not None:
        return settings.log_default_year
    return year_from_mtime(path).year


def parse_first_batch(lines: pl.DataFrame, fmt, path: Path, settings: Settings, *,
                      conn: duckdb.DuckDBPyConnection | None = None,
                      roots: tuple[str, ...] = ()) -> tuple[pl.DataFrame, YearChoice | None]:
    """A file's first batch parsed in the year `faultline.ingest.logyear`'s rules choose, and that choice.

    `fmt` is a format name or LogFormat. The choice is None when the batch holds no year-less timestamp (a year
    that came with the lines needs no rule). `roots`: the folders ingested, for the layout rule; `conn`: the
    warehouse, for the tickets rule. Lines are not rolled over New Year here (`roll_over_new_years`).
    """
    from faultline.ingest.logformats import get_format, parse_lines
    from faultline.ingest.logspec import RAW

    frame = lines.select("line_no", "raw")
    given = settings.log_default_year
    layout = year_from_layout(path, roots) if given is None else None
    guess = YearChoice(given, "given") if given is not None else layout or year_from_mtime(path)
    parsed = parse_lines(frame, fmt=fmt, default_year=guess.year)
    if fmt == RAW or not needs_year(get_format(fmt) if isinstance(fmt, str) else fmt):
        return parsed, None
    rolled, _ = roll_over_new_years(parsed["ts"], guess.year)
    year_less = rolled.filter((parsed["ts"].dt.year() == guess.year).fill_null(False))
    if year_less.len() == 0:
        return parsed, None
    choice = guess
    if layout is not None:
        choice = rotated_back(layout, year_less[0])
    elif guess.source == "mtime" and conn is not None:
        choice = year_from_tickets(conn, settings.log_timezone, year_less.min(), year_less.max(), guess.year) or guess
    if choice.year != guess.year:
        parsed = parse_lines(frame, fmt=fmt, default_year=choice.year)
    return parsed, choice


def resolve_log_format(log_format: str | None):  # -> str | LogFormat | None
    """A `--log-format` value: a template (has `<Field>`s) becomes a LogFormat; names pass through."""
    if log_format and "<" in log_format:
        from faultline.ingest.logformats import format_from_template

        return format_from_template(log_format)
    return log_format


def _write(conn: duckdb.DuckDBPyConnection, accepted: pa.Table, source_file: str, first: bool) -> dict[str, int]:
    if first:
        conn.execute("DELETE FROM log_lines WHERE source_file = ?", [source_file])
    store.insert_rows(conn, "log_lines", accepted)
    return {"inserted": accepted.num_rows}


def _binary(raw: FileIdentity, head_bytes: bytes, why: str) -> Prepared:
    head = head_bytes[:256].hex()
    reject = Reject(0, "file_is_text", f"{raw.path.name} is not a text log: it {why}; "
                    "pass the text log (gzip is read directly)", f"first bytes (hex): {head}")
    empty = pa.table({c: pa.array([], pa.string()) for c in ("line_no", "raw")})
    return Prepared("log_lines", 1, empty, [reject], "line_no", "raw", _write, messages=[reject.reason])


def prepare_logs(raw: FileIdentity, source_file: str, settings: Settings, *, log_format: str | None,
                 incident_id: str | None, batch_bytes: int | None = None, host: str | None = None,
                 conn: duckdb.DuckDBPyConnection | None = None, roots: tuple[str, ...] = ()) -> Prepared:
    """Stream, decode and parse a log file in batches; a binary file is one rejected record.

    `host` fills the host of lines whose format carries none (a device's own log file). Year-less timestamps
    take the year `parse_first_batch` chooses (`roots`: the folders ingested; `conn`: for the tickets), recorded
    in `stats` as log_year and log_year_source; a file that crosses New Year moves on a year there.
    """
    first_block = next(line_blocks(raw, 8192))[0]
    why = binary_reason(first_block)
    if why:
        return _binary(raw, first_block, why)
    prepared = Prepared(
        table="log_lines", records_in=0, candidates=None, rejects=[], record_no_column="line_no",
        raw_column="raw", writer=_write, drop_columns=["raw_bytes"],
    )
    prepared.batches = _batches(raw, source_file, settings, resolve_log_format(log_format), incident_id,
                                batch_bytes or BATCH_BYTES, prepared, host, conn=conn, roots=roots)
    return prepared


def _batches(raw: FileIdentity, source_file: str, settings: Settings, fmt, incident_id: str | None,
             batch_bytes: int, prepared: Prepared, host: str | None = None, *,
             conn: duckdb.DuckDBPyConnection | None = None, roots: tuple[str, ...] = ()) -> Iterator[pa.Table]:
    from faultline.ingest.logformats import detect_format, parse_lines

    year = default_year(raw.path, settings)
    choice: YearChoice | None = None
    carry = YearCarry()
    formats: dict[str, int] = {}
    bad_utf8 = 0
    ingested_at = datetime.now().astimezone()
    for chunk, first_line in line_blocks(raw, batch_bytes):
        lines = text_lines(chunk).with_columns(pl.col("line_no") + (first_line - 1))
        if fmt is None:  # detect once, on the first slice, for the whole file
            fmt = detect_format(lines["raw"].head(2000).to_list()).name
        if first_line == 1:  # the year, once, from the first slice
            parsed, choice = parse_first_batch(lines, fmt, Path(source_file), settings, conn=conn, roots=roots)
            year = choice.year if choice else year
        else:
            parsed = parse_lines(lines.select("line_no", "raw"), fmt=fmt, default_year=year)
        if choice is not None:
            ts, carry = roll_over_new_years(parsed["ts"], year, carry)
            parsed = parsed.with_columns(ts)
        frame = parsed.with_columns(
            lines["decode_error"], lines["raw_bytes"],
            pl.lit(source_file).alias("source_file"),
            pl.lit(raw.sha256).alias("file_sha256"),
            pl.lit(incident_id, dtype=pl.Utf8).alias("incident_id"),
            pl.lit(ingested_at).alias("ingested_at"),
        )
        if host is not None:
            frame = frame.with_columns(pl.col("host").fill_null(pl.lit(host)))
        frame = frame.with_columns(device_expr(source_file, host)).select(*LOG_COLUMNS, "raw_bytes")
        prepared.records_in += frame.height
        for name, count in frame.group_by("format").len().iter_rows():
            formats[name] = formats.get(name, 0) + count
        bad_utf8 += int(frame["decode_error"].sum())
        yield frame.to_arrow()
    if formats:
        ranked = sorted(formats.items(), key=lambda kv: -kv[1])
        prepared.messages.append("formats: " + ", ".join(f"{f} {n}" for f, n in ranked))
    if choice is not None:
        crossed = f"; it crosses New Year: its last lines are dated {year + carry.years}" if carry.years else ""
        prepared.messages.append(choice.summary() + crossed)
        prepared.stats.update(log_year=choice.year, log_year_source=choice.source)
    else:
        prepared.messages.append(f"{raw.path.name} has no log lines (empty file)")
    if bad_utf8:
        prepared.messages.append(f"{bad_utf8} line(s) held bytes that are not valid UTF-8: kept, shown as \\xNN, "
                                 "flagged log_lines.decode_error")
