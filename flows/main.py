"""The evidence job: ingest a corpus, refresh the search indexes, gather evidence for the backlog
(similar tickets, documentation, a log excerpt per open ticket).

`faultline run` runs it (a quick look at what the analyses will read); the full analysis of the
backlog — ASTRA, SADE, evaluation, marts, dashboards — is the nightly flow (`flows/nightly.py`,
`faultline nightly`, `faultline demo`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from prefect import flow, runtime, task
from prefect.cache_policies import NO_CACHE

from faultline import db
from faultline.backlog import TicketEvidence, excerpt_for_ticket, gather_evidence, key_lines, open_tickets
from faultline.config import Settings
from faultline.ingest.api import ingest_paths
from faultline.runs import finish_run, start_run
from tasks.index import sync_index_task
from tasks.ingest import ingest_file_task, ingest_incidents_task


@task(name="gather-evidence", cache_policy=NO_CACHE, task_run_name="evidence: {ticket.ticket_id}")
def gather_evidence_task(settings: Settings, ticket: Any, k: int) -> TicketEvidence:
    """Similar resolved tickets and doc sections for one open ticket."""
    from faultline.retrieval.embed import Embedder

    return gather_evidence(settings, ticket, k=k, embedder=Embedder(settings))


@task(name="log-excerpt", cache_policy=NO_CACHE, task_run_name="log excerpt: {evidence.ticket.ticket_id}")
def log_excerpt_task(conn: Any, settings: Settings, evidence: TicketEvidence, lines: Any, mined: Any,
                     miner_config: Any) -> dict[str, Any]:
    """The ticket's capped log excerpt (stored in log_excerpts); returns a summary."""
    excerpt = excerpt_for_ticket(conn, settings, evidence, lines, mined, miner_config)
    return {"excerpt_lines": len(excerpt.lines), "input_lines": excerpt.input_lines,
            "level_counts": excerpt.excerpt_level_counts(), "truncated": excerpt.truncated,
            "key_lines": key_lines(excerpt, 4)}


@flow(name="faultline-main", flow_run_name="main: {corpus}")
def main_flow(corpus: str, settings: Settings | None = None, k: int = 3) -> dict[str, Any]:
    """Ingest `corpus/{history,backlog}` (generated incidents) and `corpus/{tickets,logs,docs}`, sync
    indexes, and gather evidence and a log excerpt per open ticket."""
    settings = settings or Settings()
    conn = db.open_warehouse(settings)
    flow_run_id = str(runtime.flow_run.id)
    run_id = start_run(conn, "main", settings=settings, prefect_flow_run_id=flow_run_id)
    root = Path(corpus)
    ingests, log_files = {}, []
    # a generated corpus: history (resolved) before backlog (open), each incident with its own logs
    for part in ("history", "backlog"):
        if (root / part).is_dir():
            ingests[f"incidents_{part}"] = ingest_incidents_task(conn, settings, root / part)
    for kind in ("tickets", "logs", "docs"):
        folder = root / kind
        if folder.is_dir():
            report = ingest_paths(conn, settings, kind, [folder], prefect_flow_run_id=flow_run_id,
                                  per_file=ingest_file_task)
            ingests[kind] = report.totals()
            if kind == "logs":
                log_files = [f.path for f in report.files if f.status != "failed"]
    indexes = {kind: sync_index_task(conn, settings, kind) for kind in ("tickets", "docs")}
    backlog = open_tickets(conn)
    evidence = [gather_evidence_task(settings, ticket, k) for ticket in backlog]
    excerpts: list[Any] = []
    incident_of = dict(conn.execute("SELECT ticket_id, incident_id FROM incidents").fetchall())
    if log_files or incident_of:
        from faultline.logs.pipeline import lines_for_files, lines_for_incident, mine_incident_templates
        from faultline.logs.templates import default_miner_config

        miner_config = default_miner_config()
        shared = None
        for item in evidence:
            incident = incident_of.get(item.ticket.ticket_id)
            if incident is not None:  # the incident's own device logs, mined on their own
                lines = lines_for_incident(conn, incident)
                mined = mine_incident_templates(lines, miner_config)
            else:  # plain ticket exports: every log file ingested in this run
                if shared is None:
                    lines = lines_for_files(conn, log_files)
                    shared = (lines, mine_incident_templates(lines, miner_config))
                lines, mined = shared
            excerpts.append(log_excerpt_task(conn, settings, item, lines, mined, miner_config))
    failed = sum(t.get("failed_files", 0) + len(t.get("failed", {})) for t in ingests.values())
    stats = {"ingest": ingests, "index": indexes, "open_tickets": len(backlog)}
    finish_run(conn, run_id, status="completed_with_failures" if failed else "completed", stats=stats)
    items = [{**asdict(item), "log_excerpt": excerpts[i] if excerpts else None} for i, item in enumerate(evidence)]
    return {"run_id": run_id, "prefect_flow_run_id": flow_run_id, **stats, "evidence": items}
