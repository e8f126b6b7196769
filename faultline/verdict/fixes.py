"""Fixes that fit the cause: precedents from resolved tickets and documentation sections about the verdict's label.

A ticket is a precedent when its resolution's cause sentences read as the label (`labels.classify_text`; exact
label before family, retrieved before recent, resolved before the incident was opened); without one the verdict
says no fix is known yet. Readings are cached per content hash. docs/verdict.md#fixes-that-fit-the-cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import duckdb

from faultline.astra.records import SimilarTicket

MIN_READING = 0.15  # the similarity agent's floor for a note to describe a label at all
MAX_PRECEDENTS = 2
_CHECK_WORDS = re.compile(r"(?i)\b(works? again|back up|re-?established|reconverged|recovered|confirm\w*|verif\w*|"
                          r"came back|answers? again|resolves? again|passes|succeed\w*|reachable again)\b")

HISTORY_SQL = """
SELECT ticket_id, title, resolution_note, resolved_at, content_hash
FROM tickets
WHERE resolved_at IS NOT NULL AND coalesce(resolution_note, '') <> ''
  AND (CAST(? AS TIMESTAMPTZ) IS NULL OR resolved_at < CAST(? AS TIMESTAMPTZ))
ORDER BY resolved_at DESC, ticket_id
"""
DOCS_SQL = "SELECT chunk_id, title, text FROM doc_chunks ORDER BY doc_id, ordinal"


@dataclass(frozen=True)
class Precedent:
    """A resolved ticket whose resolution reads as the verdict's label (or its family)."""

    ticket_id: str
    title: str
    resolved_at: str
    label: str  # the label its resolution reads as
    exact: bool  # the verdict's own label (else: same family)
    causes: tuple[str, ...]  # its cause sentences, verbatim
    fixes: tuple[str, ...]  # its fix sentences, verbatim
    checks: tuple[str, ...]  # fix sentences that say how it was confirmed


@dataclass(frozen=True)
class DocSection:
    """A documentation section whose text reads as the verdict's label."""

    chunk_id: str
    title: str
    label: str
    exact: bool
    text: str


@lru_cache(maxsize=50_000)
def _reading(key: str, text: str) -> tuple[str, float] | None:  # key: cache identity (id + content hash)
    from faultline.astra.labels import classify_text

    ranked = classify_text(text)
    return ranked[0] if ranked and ranked[0][1] >= MIN_READING else None


def _fits(reading: tuple[str, float] | None, labels: list[str]) -> tuple[str, bool] | None:
    if reading is None:
        return None
    from faultline.truth.taxonomy import taxonomy

    label = reading[0]
    if label in labels:
        return label, True
    families = {taxonomy().family_of(lb) for lb in labels} - {None}
    return (label, False) if taxonomy().family_of(label) in families else None


def precedents(conn: duckdb.DuckDBPyConnection, labels: list[str], *, before: str | None,
               similar: list[SimilarTicket] = (), limit: int = MAX_PRECEDENTS) -> list[Precedent]:
    """Resolved tickets whose resolutions read as one of `labels` (exact before family; retrieved before recent)."""
    from faultline.astra.agents.similarity import split_resolution
    from faultline.astra.lexical import sentences

    if not labels:
        return []
    rank = {t.ticket_id: i for i, t in enumerate(sorted(similar, key=lambda t: -t.score))}
    found: list[tuple[tuple[int, int, int], Precedent]] = []
    for order, (ticket_id, title, note, resolved_at, digest) in enumerate(
            conn.execute(HISTORY_SQL, [before, before]).fetchall()):
        causes, fixes = split_resolution(note)
        fit = _fits(_reading(f"{ticket_id}:{digest}", " ".join(causes)), labels)
        if fit is None:
            continue
        checks = tuple(s for s in fixes if _CHECK_WORDS.search(s)) or tuple(
            s for s in sentences(note) if _CHECK_WORDS.search(s) and s not in causes)
        found.append(((0 if fit[1] else 1, 0 if ticket_id in rank else 1, rank.get(ticket_id, order)),
                      Precedent(ticket_id, title, resolved_at.date().isoformat() if resolved_at else "", fit[0],
                                fit[1], tuple(causes), tuple(fixes), checks)))
    return [p for _key, p in sorted(found, key=lambda kv: kv[0])][:limit]


def doc_sections(conn: duckdb.DuckDBPyConnection, labels: list[str], limit: int = 2) -> list[DocSection]:
    """Documentation sections whose text reads as one of `labels` (exact label first)."""
    if not labels:
        return []
    found = []
    for chunk_id, title, text in conn.execute(DOCS_SQL).fetchall():
        fit = _fits(_reading(f"doc:{chunk_id}", f"{title}\n{text}"), labels)
        if fit is not None:
            found.append(DocSection(chunk_id, title, fit[0], fit[1], text.strip()))
    return sorted(found, key=lambda d: 0 if d.exact else 1)[:limit]


