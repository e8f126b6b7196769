"""The main job: ingest a corpus, refresh the search indexes, gather evidence for the backlog.

`faultline run` runs it on the shipped sample; later stages (ASTRA, SADE, evaluation, marts)
extend this flow.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from prefect import flow, runtime, task
from prefect.cache_policies import NO_CACHE

from faultline import db
from faultline.backlog import gather_evidence, open_tickets
from faultline.config import Settings
from faultline.ingest.api import ingest_paths
from faultline.runs import finish_run, start_run
from tasks.index import sync_index_task
from tasks.ingest import ingest_file_task


@task(name="gather-evidence", cache_policy=NO_CACHE, task_run_name="evidence: {ticket.ticket_id}")
def gather_evidence_task(settings: Settings, ticket: Any, k: int) -> dict[str, Any]:
    """Similar resolved tickets and doc sections for one open ticket."""
    from faultline.retrieval.embed import Embedder

    return asdict(gather_evidence(settings, ticket, k=k, embedder=Embedder(settings)))


@flow(name="faultline-main", flow_run_name="main: {corpus}")
def main_flow(corpus: str, settings: Settings | None = None, k: int = 3) -> dict[str, Any]:
    """Ingest `corpus/{tickets,logs,docs}`, sync indexes, and gather evidence per open ticket."""
    settings = settings or Settings()
    conn = db.open_warehouse(settings)
    flow_run_id = str(runtime.flow_run.id)
    run_id = start_run(conn, "main", settings=settings, prefect_flow_run_id=flow_run_id)
    root = Path(corpus)
    ingests = {}
    for kind in ("tickets", "logs", "docs"):
        folder = root / kind
        if folder.is_dir():
            report = ingest_paths(conn, settings, kind, [folder], prefect_flow_run_id=flow_run_id,
                                  per_file=ingest_file_task)
            ingests[kind] = report.totals()
    indexes = {kind: sync_index_task(conn, settings, kind) for kind in ("tickets", "docs")}
    backlog = open_tickets(conn)
    evidence = [gather_evidence_task(settings, ticket, k) for ticket in backlog]
    failed = sum(t.get("failed_files", 0) for t in ingests.values())
    stats = {"ingest": ingests, "index": indexes, "open_tickets": len(backlog)}
    finish_run(conn, run_id, status="completed_with_failures" if failed else "completed", stats=stats)
    return {"run_id": run_id, "prefect_flow_run_id": flow_run_id, **stats, "evidence": evidence}
