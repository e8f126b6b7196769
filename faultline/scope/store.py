"""Storing a scope: one `log_scopes` row per entry; a round computed again replaces its rows."""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from faultline.scope.resolve import Scope, ScopeEntry
from faultline.stale import mark_stale

_COLUMNS = ("incident_id", "round", "device", "kind", "reason", "matched", "window_start", "window_end",
            "clock_offset_s", "lines_in_scope", "created_at")


def write_scope(conn: duckdb.DuckDBPyConnection, scope: Scope) -> None:
    """Replace the rows of the scope's incident and round."""
    now = datetime.now(timezone.utc)
    rows = [(scope.incident_id, scope.round, e.device, e.kind, e.reason, e.matched, e.window_start, e.window_end,
             e.clock_offset_s, e.lines_in_scope, now) for e in scope.entries]
    conn.execute("BEGIN")
    try:
        conn.execute("DELETE FROM log_scopes WHERE incident_id = ? AND round = ?", [scope.incident_id, scope.round])
        if rows:
            conn.executemany(f"INSERT INTO log_scopes ({', '.join(_COLUMNS)}) VALUES "
                             f"({', '.join('?' for _ in _COLUMNS)})", rows)
        mark_stale(conn, scope.incident_id, "scope")
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


def read_scope(conn: duckdb.DuckDBPyConnection, incident_id: str, round: int, log_timezone: str) -> Scope | None:
    """The stored scope of an incident's round, or None."""
    rows = conn.execute("SELECT device, kind, reason, matched, window_start, window_end, clock_offset_s, "
                        "lines_in_scope FROM log_scopes WHERE incident_id = ? AND round = ? "
                        "ORDER BY device NULLS FIRST, kind",
                        [incident_id, round]).fetchall()
    if not rows:
        return None
    entries = [ScopeEntry(device=r[0], kind=r[1], reason=r[2], matched=r[3], window_start=r[4], window_end=r[5],
                          clock_offset_s=r[6], lines_in_scope=r[7]) for r in rows]
    return Scope(incident_id=incident_id, round=round, log_timezone=log_timezone, entries=entries)
