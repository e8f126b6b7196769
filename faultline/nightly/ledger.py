"""`analysis_ledger`: the latest outcome of each (incident, method) and the input digest it was computed from."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

UPSERT_SQL = """
INSERT OR REPLACE INTO analysis_ledger (incident_id, method, input_digest, status, reason, run_id, seconds, finished_at)
VALUES (?, ?, ?, ?, ?, ?, ?, now())
"""
SELECT_SQL = "SELECT incident_id, method, input_digest, status, reason, run_id FROM analysis_ledger"
SETTLED = ("done", "skipped")  # outcomes that stand until the inputs change; failures are retried next night


@dataclass(frozen=True)
class LedgerRow:
    """One stored outcome."""

    incident_id: str
    method: str
    input_digest: str
    status: str
    reason: str | None
    run_id: str | None


def record(conn: duckdb.DuckDBPyConnection, incident_id: str, method: str, digest: str, status: str, *,
           reason: str | None = None, run_id: str | None = None, seconds: float | None = None) -> None:
    """Write (or replace) the outcome of one (incident, method)."""
    conn.execute(UPSERT_SQL, [incident_id, method, digest, status, reason, run_id, seconds])


def read(conn: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], LedgerRow]:
    """Every stored outcome by (incident, method)."""
    return {(r[0], r[1]): LedgerRow(*r) for r in conn.execute(SELECT_SQL).fetchall()}
