"""The open backlog and the first evidence gathered for each ticket.

Until the ASTRA and SADE analyses exist, the evidence is retrieval — the resolved tickets most
similar to an open ticket (filed before it) and the documentation sections that match it — and
the log excerpt built from the device logs with the ticket's and its similar tickets' words.
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


def excerpt_for_ticket(conn: duckdb.DuckDBPyConnection, settings: Settings, evidence: TicketEvidence,
                       lines: Any, mined: Any, miner_config: Any) -> Any:
    """Build and store the ticket's log excerpt (incident id = ticket id) from `lines`.

    `mined` holds the templates of exactly `lines`, mined once for the whole backlog.
    """
    from faultline.logs.pipeline import build_excerpt
    from faultline.logs.store import write_excerpt
    from faultline.logs.templates import write_templates

    ticket = evidence.ticket
    similar = [f"{hit['title']}\n{hit.get('snippet') or ''}" for hit in evidence.similar]
    excerpt = build_excerpt(lines, settings=settings, ticket_text=f"{ticket.title}\n{ticket.description}",
                            similar_texts=similar, incident_id=ticket.ticket_id, miner_config=miner_config,
                            mined=mined)
    write_templates(conn, ticket.ticket_id, lines, mined, miner_config)
    write_excerpt(conn, excerpt)
    return excerpt


def key_lines(excerpt: Any, n: int) -> list[str]:
    """The excerpt's fault lines (L1–L4) that share the most words with the ticket, for a first look."""
    terms = [t.lower() for t in excerpt.ticket_terms]

    def shared(text: str) -> int:
        low = text.lower()
        return sum(term in low for term in terms)

    faults = [line for line in excerpt.lines if {"L1", "L2", "L3", "L4"} & set(line.levels)]
    ranked = sorted(faults, key=lambda line: -shared(line.text))  # stable: log order breaks ties
    return [line.text for line in ranked[:n]]
