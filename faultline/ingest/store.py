"""Writing ingested records, quarantined records and the file ledger to the warehouse.

A file is the unit of replacement for logs, docs and quarantine: re-ingesting a changed file
replaces what it wrote before. Tickets are upserted by ticket_id, since one ticket can move
between exports.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Any

import duckdb
import pyarrow as pa

from faultline.ingest.reading import Reject

_TS = pa.timestamp("us", tz="UTC")
TICKET_SCHEMA = pa.schema([
    ("ticket_id", pa.string()), ("source", pa.string()), ("project", pa.string()),
    ("title", pa.string()), ("description", pa.string()), ("environment", pa.string()),
    ("status", pa.string()), ("resolution", pa.string()), ("resolution_note", pa.string()),
    ("priority", pa.string()), ("components", pa.list_(pa.string())),
    ("versions", pa.list_(pa.string())), ("fix_versions", pa.list_(pa.string())),
    ("created_at", _TS), ("updated_at", _TS), ("resolved_at", _TS),
    ("comments", pa.list_(pa.struct([("author", pa.string()), ("created_at", _TS), ("body", pa.string())]))),
    ("links", pa.list_(pa.struct([("type", pa.string()), ("direction", pa.string()), ("target", pa.string())]))),
    ("attributes", pa.string()), ("content_hash", pa.string()), ("source_file", pa.string()),
    ("source_record", pa.int32()),
])
_TICKET_COLUMNS = [f.name for f in TICKET_SCHEMA]

UPSERT_TICKETS_SQL = f"""
INSERT INTO tickets ({", ".join(_TICKET_COLUMNS)}, first_ingested_at, ingested_at)
SELECT {", ".join(_TICKET_COLUMNS)}, now(), now() FROM staged_tickets
ON CONFLICT (ticket_id) DO UPDATE SET
    {", ".join(f"{c} = excluded.{c}" for c in _TICKET_COLUMNS if c != "ticket_id")},
    ingested_at = excluded.ingested_at
WHERE excluded.content_hash <> tickets.content_hash
  AND (excluded.updated_at IS NULL OR tickets.updated_at IS NULL OR excluded.updated_at >= tickets.updated_at)
"""

CLASSIFY_TICKETS_SQL = """
SELECT
    count(*) FILTER (WHERE t.ticket_id IS NULL) AS inserted,
    count(*) FILTER (WHERE t.ticket_id IS NOT NULL AND s.content_hash <> t.content_hash
        AND (s.updated_at IS NULL OR t.updated_at IS NULL OR s.updated_at >= t.updated_at)) AS updated,
    count(*) FILTER (WHERE t.ticket_id IS NOT NULL AND s.content_hash = t.content_hash) AS unchanged,
    count(*) FILTER (WHERE t.ticket_id IS NOT NULL AND s.content_hash <> t.content_hash
        AND s.updated_at < t.updated_at) AS stale
FROM staged_tickets s LEFT JOIN tickets t USING (ticket_id)
"""


def ticket_table(rows: list[dict[str, Any]], *, source: str, source_file: str) -> pa.Table:
    """Arrow table of normalised ticket dicts in `tickets` column order."""
    data = [{**r, "source": source, "source_file": source_file} for r in rows]
    return pa.Table.from_pylist([{c: d.get(c) for c in _TICKET_COLUMNS} for d in data], schema=TICKET_SCHEMA)


def upsert_tickets(conn: duckdb.DuckDBPyConnection, staged: pa.Table) -> dict[str, int]:
    """Insert new tickets, update changed ones (unless older than what is stored); return counts."""
    conn.register("staged_tickets", staged)
    try:
        inserted, updated, unchanged, stale = conn.execute(CLASSIFY_TICKETS_SQL).fetchone()
        conn.execute(UPSERT_TICKETS_SQL)
    finally:
        conn.unregister("staged_tickets")
    return {"inserted": inserted, "updated": updated, "unchanged": unchanged, "stale": stale}


def insert_rows(conn: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    """Append Arrow `rows` to `table`, matching columns by name."""
    conn.register("staged_rows", rows)
    try:
        columns = ", ".join(rows.column_names)
        conn.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM staged_rows")
    finally:
        conn.unregister("staged_rows")


def replace_file_rows(conn: duckdb.DuckDBPyConnection, table: str, source_file: str, rows: pa.Table) -> None:
    """Replace every row `source_file` wrote to `table` (logs, docs) with Arrow `rows`."""
    conn.execute(f"DELETE FROM {table} WHERE source_file = ?", [source_file])
    insert_rows(conn, table, rows)


def quarantine_id(target_table: str, source_file: str, record_no: int, check: str) -> str:
    """Stable id of one rejection, so re-ingesting a file never duplicates it."""
    return hashlib.sha256(f"{target_table}|{source_file}|{record_no}|{check}".encode()).hexdigest()[:32]


def replace_quarantine(conn: duckdb.DuckDBPyConnection, *, target_table: str, source_file: str,
                       rejects: list[Reject], run_id: str | None) -> None:
    """Replace the file's earlier rejections with `rejects`."""
    conn.execute("DELETE FROM quarantine WHERE target_table = ? AND source_file = ?", [target_table, source_file])
    if not rejects:
        return
    now = datetime.now(timezone.utc)
    conn.executemany(
        "INSERT OR REPLACE INTO quarantine VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [[quarantine_id(target_table, source_file, r.record_no, r.check), run_id, target_table, source_file,
          r.record_no, r.check, r.reason, r.raw, now] for r in rejects],
    )


RECORD_FILE_SQL = """
INSERT OR REPLACE INTO ingest_files (kind, source_file, file_sha256, size_bytes, records_in, accepted, quarantined,
                                     run_id, ingested_at, log_year, log_year_source)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, now(), ?, ?)
"""


def record_file(conn: duckdb.DuckDBPyConnection, *, kind: str, source_file: str, sha256: str, size_bytes: int,
                records_in: int, accepted: int, quarantined: int, run_id: str | None, log_year: int | None = None,
                log_year_source: str | None = None) -> None:
    """Write the file's line in the ingest ledger (a log file's: the year its year-less lines took, and why)."""
    conn.execute(RECORD_FILE_SQL, [kind, source_file, sha256, size_bytes, records_in, accepted, quarantined, run_id,
                                   log_year, log_year_source])


def known_sha(conn: duckdb.DuckDBPyConnection, kind: str, source_file: str) -> str | None:
    """The content hash last ingested for this file, if any."""
    row = conn.execute("SELECT file_sha256 FROM ingest_files WHERE kind = ? AND source_file = ?",
                       [kind, source_file]).fetchone()
    return row[0] if row else None


def known_log_year(conn: duckdb.DuckDBPyConnection, source_file: str) -> int | None:
    """The year a log file's year-less timestamps took when it was last ingested, if any."""
    rows = conn.execute("SELECT log_year FROM ingest_files WHERE kind = 'logs' AND source_file = ?",
                        [source_file]).fetchall()
    return rows[0][0] if rows else None
