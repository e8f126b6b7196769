"""Building the `Incident` an analysis may see from the warehouse (ticket text and opening time only)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from faultline.astra.records import Incident
from faultline.errors import FaultlineError

if TYPE_CHECKING:
    import duckdb

INCIDENT_SQL = """
SELECT i.incident_id, coalesce(i.ticket_id, t.ticket_id), coalesce(t.title, i.title, i.incident_id),
       coalesce(t.description, ''), coalesce(t.environment, ''), coalesce(i.opened_at, t.created_at),
       coalesce(t.components, [])
FROM incidents i LEFT JOIN tickets t ON t.ticket_id = i.ticket_id
WHERE i.incident_id = ?
"""
TICKET_SQL = """
SELECT ticket_id, ticket_id, title, coalesce(description, ''), coalesce(environment, ''), created_at,
       coalesce(components, [])
FROM tickets WHERE ticket_id = ?
"""


def iso_utc(value: datetime | None) -> str | None:
    """An ISO timestamp in UTC (naive values are taken as UTC), or None."""
    if value is None:
        return None
    stamp = value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return stamp.isoformat()


def load_incident(conn: duckdb.DuckDBPyConnection, incident_id: str, *, with_components: bool = True) -> Incident:
    """The incident `incident_id` (or, failing that, the ticket with that id) as an analysis sees it.

    Ground truth and the ticket's resolution are never read. ``with_components=False`` withholds
    the ticket's components (the fault-area benchmark).
    """
    row = conn.execute(INCIDENT_SQL, [incident_id]).fetchone() or conn.execute(TICKET_SQL, [incident_id]).fetchone()
    if row is None:
        raise FaultlineError(f"no incident or ticket {incident_id!r} in the warehouse",
                             fix="ingest it first: `faultline ingest incidents DIR` or `faultline ingest tickets FILE`")
    inc_id, ticket_id, title, description, environment, opened, components = row
    return Incident(incident_id=inc_id, ticket_id=ticket_id, title=title, description=description,
                    environment=environment, opened_at=iso_utc(opened),
                    components=list(components) if with_components else [])
