"""ASTRA on one incident: the unit every entry point runs (the nightly, `eval astra|verdict`, `report`, the benches).

It reads the incident from the warehouse, analyses it with the documentation it is lent (else it opens a docs
session for itself and closes it when it ends, however it ends), stores the analysis and, when the incident has
a ground truth, its scores.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faultline.astra.evaluate import AstraScore
from faultline.astra.records import AstraResult, Incident
from faultline.outcome import IncidentRef, Outcome
from faultline.truth.records import Truth

if TYPE_CHECKING:
    import duckdb

    from faultline.astra.docs_client import DocsClient
    from faultline.astra.engine import Agents
    from faultline.config import Settings


@dataclass
class AstraRun:
    """One unit's results: its outcome, the analysis, and its score when the truth is known."""

    outcome: Outcome
    incident: Incident
    result: AstraResult
    truth: Truth | None = None
    score: AstraScore | None = None


def run_astra(settings: Settings, conn: duckdb.DuckDBPyConnection, incident: IncidentRef | str, *,
              analyst: str = "deterministic", max_rounds: int = 5, run_id: str | None = None,
              docs: DocsClient | None = None, agents: Agents | None = None) -> AstraRun:
    """Analyse one incident, store the analysis per round and its scores against the truth when there is one.

    `docs`: a docs session to use (the caller closes it); `agents`: other agents than the project's (tests).
    """
    from faultline.astra.engine import analyse
    from faultline.astra.eval_store import save_scores
    from faultline.astra.evaluate import score_result
    from faultline.astra.incident import load_incident
    from faultline.astra.store import save_result
    from faultline.llm.gateway import count_calls
    from faultline.truth.store import load_truth

    started = time.perf_counter()
    incident_id = incident if isinstance(incident, str) else incident.incident_id
    record = load_incident(conn, incident_id)
    with _docs_session(settings, docs, needed=agents is None) as session:
        result = analyse(record, settings=settings, conn=conn, analyst=analyst, max_rounds=max_rounds,
                         run_id=run_id, agents=agents, docs=session)
    save_result(conn, result, run_id=run_id)
    truth = load_truth(conn, record.incident_id)
    score = score_result(result, record, truth) if truth is not None else None
    if score is not None:
        save_scores(conn, [score], {record.incident_id: truth}, run_id=run_id)
    final = result.rounds[-1].report
    outcome = Outcome(incident_id=record.incident_id, method="astra", label=final.label or final.category,
                      devices=list(final.devices), scored=score is not None,
                      rubric_accuracy=float(score.accuracy) if score else None,
                      llm_calls=count_calls(conn, record.incident_id, run_id),
                      seconds=round(time.perf_counter() - started, 3))
    return AstraRun(outcome=outcome, incident=record, result=result, truth=truth, score=score)


def score_stored(conn: duckdb.DuckDBPyConnection, result: AstraResult, incident: Incident) -> AstraScore | None:
    """A stored analysis's score when the incident's truth is known, else None (shown, not stored)."""
    from faultline.astra.evaluate import score_result
    from faultline.truth.store import load_truth

    truth = load_truth(conn, incident.incident_id)
    return score_result(result, incident, truth) if truth is not None and result.rounds else None


@contextmanager
def docs_session(settings: Settings) -> Iterator[DocsClient | None]:
    """A docs MCP session for a batch of analyses, closed when the block ends; None when the doc index cannot be
    reached (the domain agent then says why in its output)."""
    from faultline.astra.docs_client import open_docs_client

    client = open_docs_client(settings)
    try:
        yield client
    finally:
        if client is not None:
            client.close()


@contextmanager
def _docs_session(settings: Settings, lent: DocsClient | None, *, needed: bool) -> Iterator[Any]:
    if lent is not None or not needed:
        yield lent
        return
    with docs_session(settings) as session:
        yield session
