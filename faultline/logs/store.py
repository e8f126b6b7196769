"""Storing excerpts: one `log_excerpts` row per incident and ASTRA round."""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from faultline.logs.excerpt import LogExcerpt

DELETE_EXCERPT_SQL = "DELETE FROM log_excerpts WHERE incident_id = ? AND round = ?"

INSERT_EXCERPT_SQL = """
INSERT INTO log_excerpts (incident_id, round, input_lines, excerpt_lines, level_counts, suppressed,
                          collapsed_lines, truncated, excerpt, ticket_terms, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

READ_EXCERPT_SQL = "SELECT excerpt FROM log_excerpts WHERE incident_id = ? AND round = ?"


def write_excerpt(conn: duckdb.DuckDBPyConnection, excerpt: LogExcerpt) -> None:
    """Store `excerpt`, replacing any earlier excerpt of the same incident and round."""
    suppressed = [{"component": c.component, "lines": c.lines, "share": round(c.share, 4)}
                  for c in excerpt.suppressed]
    params = [
        excerpt.incident_id, excerpt.round, excerpt.input_lines, len(excerpt.lines),
        json.dumps(excerpt.level_counts), json.dumps(suppressed), excerpt.collapsed_lines,
        excerpt.truncated, excerpt.to_json(), list(excerpt.ticket_terms), datetime.now().astimezone(),
    ]
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute(DELETE_EXCERPT_SQL, [excerpt.incident_id, excerpt.round])
        conn.execute(INSERT_EXCERPT_SQL, params)
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


def read_excerpt(conn: duckdb.DuckDBPyConnection, incident_id: str, round: int = 0) -> LogExcerpt | None:
    """The stored excerpt of an incident and round, or None when there is none."""
    row = conn.execute(READ_EXCERPT_SQL, [incident_id, round]).fetchone()
    if row is None:
        return None
    return LogExcerpt.model_validate_json(row[0])
