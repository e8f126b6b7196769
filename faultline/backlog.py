"""The open backlog and the first evidence gathered for each ticket.

Until the ASTRA and SADE analyses exist, the evidence is retrieval: the resolved tickets most
similar to an open ticket (filed before it) and the documentation sections that match it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import duckdb

from faultline.config import Settings

OPEN_TICKETS_SQL = """
SELECT ticket_id, title, coalesce(description, '') AS description, created_at
FROM tickets
WHERE resolved_at IS NULL AND coalesce(resolution, '') = ''
ORDER BY created_at, ticket_id
"""


@dataclass(frozen=True)
class OpenTicket:
    """A backlog ticket to analyse."""

    ticket_id: str
    title: str
    description: str
    created_at: datetime | None


@dataclass
class TicketEvidence:
    """Similar resolved tickets and matching doc sections for one open ticket."""

    ticket: OpenTicket
    similar: list[dict[str, Any]] = field(default_factory=list)
    docs: list[dict[str, Any]] = field(default_factory=list)


def open_tickets(conn: duckdb.DuckDBPyConnection) -> list[OpenTicket]:
    """Tickets not yet resolved, oldest first."""
    return [OpenTicket(*row) for row in conn.execute(OPEN_TICKETS_SQL).fetchall()]


def gather_evidence(settings: Settings, ticket: OpenTicket, *, k: int, embedder: Any = None) -> TicketEvidence:
    """Hybrid search for resolved tickets filed before this one, and for documentation."""
    from dataclasses import asdict

    from faultline.retrieval.search import search

    query = f"{ticket.title}\n{ticket.description}"
    where = "resolved_at IS NOT NULL"
    if ticket.created_at is not None:
        stamp = ticket.created_at.astimezone(timezone.utc) if ticket.created_at.tzinfo else ticket.created_at
        where += f" AND created_at < timestamp '{stamp:%Y-%m-%d %H:%M:%S}'"  # Lance reads it as UTC
    similar = search(settings, "tickets", query, k=k, mode="hybrid", where=where, embedder=embedder)
    docs = search(settings, "docs", query, k=k, mode="hybrid", embedder=embedder)
    return TicketEvidence(ticket, [asdict(h) for h in similar], [asdict(h) for h in docs])
