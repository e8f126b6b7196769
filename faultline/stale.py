"""Marking an incident's marts stale: what the stores call when they replace an incident's analysis rows (and
the ingest, its ground truth).

The per-incident marts (`incremental: true` in their yml) are refreshed for the marked incidents only; see
`faultline.marts.refresh_marts`. A store calls `mark_stale` inside the transaction that writes the rows, so the
mark and the rows land together or not at all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import duckdb

Source = Literal["astra", "scope", "sade", "verdict", "truth"]
MARK_SQL = "INSERT INTO marts_stale (incident_id, source, marked_at) VALUES (?, ?, ?)"
# the tables whose writers mark: an incremental mart may read these and nothing else
MARKED_TABLES = frozenset({"astra_rounds", "claims", "evidence", "judge_scores", "followup_queries", "log_scopes",
                           "sade_steps", "sade_flags", "submissions", "verdicts", "verdict_claims", "verdict_checks",
                           "ground_truth"})


def mark_stale(conn: duckdb.DuckDBPyConnection, incident_id: str, source: Source) -> None:
    """Note that `incident_id`'s rows of `source`'s tables changed (call inside the writing transaction)."""
    conn.execute(MARK_SQL, [incident_id, source, datetime.now(UTC)])
