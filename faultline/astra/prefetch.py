"""ASTRA's shared pre-fetch: resolved tickets similar to an incident, reranked, with resolution trails.

A hybrid search takes ``astra_prefetch_candidates`` tickets resolved (per ``astra_history_cutoff``: or filed)
before the incident was opened, never its own; a reranker (`faultline.astra.rerank`) keeps the best of each batch,
then the best ``astra_similar_k`` scoring ``astra_similar_min_score``: docs/astra.md#pre-fetch-and-rerank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from faultline.astra.records import Incident, SimilarTicket
from faultline.astra.rerank import Candidate, Reranker

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

CANDIDATES_SQL = """
SELECT ticket_id, title, coalesce(description, ''), coalesce(resolution_note, ''), coalesce(components, []),
       resolved_at, coalesce(comments, []), created_at
FROM tickets WHERE ticket_id IN (SELECT unnest(?::VARCHAR[])) AND resolved_at IS NOT NULL
"""
TRAIL_COMMENTS = 3
TRAIL_CHARS = 1500
TRAIL_TOP = 2


@dataclass
class Prefetch:
    """The kept similar tickets, plus what a benchmark needs: the plain hybrid order and the reranker."""

    similar: list[SimilarTicket]
    hybrid_ids: list[str]  # the candidates in plain hybrid-search order (the baseline to beat)
    reranked_ids: list[str]  # every batch survivor, best first (before the threshold and top-k)
    reranker: str
    details: dict[str, Candidate] = field(default_factory=dict)  # ticket_id -> candidate text (kept ones)
    missing: str | None = None  # "ticket history: <why>" when there was no ticket index to search


def _utc(iso: str | None) -> datetime | None:
    if not iso:
        return None
    stamp = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return stamp.astimezone(timezone.utc) if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)


def eligibility_filter(incident: Incident, cutoff: str = "resolved") -> str:
    """The Lance prefilter: resolved, resolved (or created) before the incident was opened, not its own ticket."""
    where = "resolved_at IS NOT NULL"
    opened = _utc(incident.opened_at)
    if opened is not None:
        column = "resolved_at" if cutoff == "resolved" else "created_at"
        where += f" AND {column} < timestamp '{opened:%Y-%m-%d %H:%M:%S.%f}'"
    if incident.ticket_id:
        where += " AND id != '{}'".format(incident.ticket_id.replace("'", "''"))
    return where


def query_text(incident: Incident) -> str:
    """What the pre-fetch searches with: title, description and environment."""
    return "\n".join(p for p in (incident.title, incident.description, incident.environment) if p)


def _load_candidates(conn: duckdb.DuckDBPyConnection, ids: list[str], hybrid: dict[str, float],
                     incident: Incident, cutoff: str, ranks: dict[str, int] | None = None) -> list[Candidate]:
    opened = _utc(incident.opened_at)
    cursor = conn.cursor()
    try:
        rows = cursor.execute(CANDIDATES_SQL, [ids]).fetchall()
    finally:
        cursor.close()
    found: dict[str, Candidate] = {}
    for ticket_id, title, description, note, components, resolved, comments, created in rows:
        resolved_utc = _as_utc(resolved)
        stamp = resolved_utc if cutoff == "resolved" else _as_utc(created)
        if ticket_id == incident.ticket_id or (opened is not None and (stamp is None or stamp >= opened)):
            continue  # the index may lag the warehouse: re-check eligibility on the warehouse's own rows
        found[ticket_id] = Candidate(ticket_id=ticket_id, title=title, description=description,
                                     resolution_note=note, components=list(components),
                                     resolved_at=resolved_utc.isoformat() if resolved_utc else None,
                                     comments=list(comments),
                                     hybrid_score=hybrid.get(ticket_id, 0.0),
                                     hybrid_rank=(ranks or {}).get(ticket_id, 0))
    return [found[i] for i in ids if i in found]


def resolution_trail(candidate: Candidate) -> str:
    """The resolution note and the last comments of a ticket, capped at ``TRAIL_CHARS``."""
    parts = [f"Resolution: {candidate.resolution_note.strip()}"] if candidate.resolution_note.strip() else []
    for comment in candidate.comments[-TRAIL_COMMENTS:]:
        body = " ".join(str(comment.get("body") or "").split())
        if body:
            parts.append(f"Comment by {comment.get('author') or 'unknown'}: {body}")
    trail = "\n".join(parts)
    return trail if len(trail) <= TRAIL_CHARS else trail[: TRAIL_CHARS - 3].rstrip() + "..."


def rerank(settings: Settings, incident: Incident, candidates: list[Candidate],
           reranker: Reranker) -> list[tuple[Candidate, float]]:
    """Score candidates in batches, keep the best few of each batch; survivors best first."""
    kept: list[tuple[Candidate, float]] = []
    size = settings.astra_rerank_batch
    for start in range(0, len(candidates), size):
        batch = candidates[start:start + size]
        scores = reranker.score(incident, batch)
        ranked = sorted(batch, key=lambda c: (-scores.get(c.ticket_id, 0.0), c.ticket_id))
        kept.extend((c, scores.get(c.ticket_id, 0.0)) for c in ranked[: settings.astra_rerank_keep])
    return sorted(kept, key=lambda pair: (-pair[1], pair[0].ticket_id))


def prefetch(settings: Settings, conn: duckdb.DuckDBPyConnection, incident: Incident, *,
             reranker: Reranker | None = None, embedder: Any = None) -> Prefetch:
    """Run the pre-fetch for ``incident``; no eligible history gives an empty result, not an error.

    No ticket index at all (missing or empty) is an empty result too, with ``missing`` saying why and how to
    build one: the history is an optional source.
    """
    from faultline.astra.rerank import LexicalReranker
    from faultline.retrieval.search import MissingIndexError, search

    reranker = reranker or LexicalReranker(settings, embedder=embedder)
    try:
        hits = search(settings, "tickets", query_text(incident), k=settings.astra_prefetch_candidates,
                      mode="hybrid", where=eligibility_filter(incident, settings.astra_history_cutoff),
                      embedder=embedder)
    except MissingIndexError as exc:
        return Prefetch(similar=[], hybrid_ids=[], reranked_ids=[], reranker=reranker.name,
                        missing=f"ticket history: {exc.message} (fix: {exc.fix})")
    ids = [h.id for h in hits]
    candidates = _load_candidates(conn, ids, {h.id: h.score for h in hits}, incident, settings.astra_history_cutoff,
                                  {h.id: n for n, h in enumerate(hits, start=1)})
    survivors = rerank(settings, incident, candidates, reranker)
    final = [(c, s) for c, s in survivors if s >= settings.astra_similar_min_score][: settings.astra_similar_k]
    similar = [
        SimilarTicket(ticket_id=c.ticket_id, title=c.title, score=round(s, 4), resolved_at=c.resolved_at,
                      components=c.components, resolution_trail=resolution_trail(c) if n < TRAIL_TOP else None)
        for n, (c, s) in enumerate(final)
    ]
    return Prefetch(similar=similar, hybrid_ids=ids, reranked_ids=[c.ticket_id for c, _ in survivors],
                    reranker=reranker.name, details={c.ticket_id: c for c, _ in final})
