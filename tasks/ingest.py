"""Prefect tasks wrapping the ingest engine: one task run per file, or per folder of generated incidents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from faultline.config import Settings
from faultline.ingest.api import FileReport, ingest_one
from faultline.ingest.incidents import IncidentIngestReport, ingest_incidents


@task(name="ingest-file", cache_policy=NO_CACHE, task_run_name="ingest {kind}: {path.name}")
def ingest_file_task(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, path: Path, *,
                     run_id: str | None, force: bool = False, **options: Any) -> FileReport:
    """Ingest one file; failures come back as a failed FileReport (and a run_failures row)."""
    return ingest_one(conn, settings, kind, path, run_id=run_id, force=force, **options)


@task(name="ingest-incidents", cache_policy=NO_CACHE, task_run_name="ingest incidents: {folder.name}")
def ingest_incidents_task(conn: duckdb.DuckDBPyConnection, settings: Settings, folder: Path, *,
                          parent_run_id: str | None = None) -> IncidentIngestReport:
    """Ingest one generated corpus folder (tickets, device logs, snapshots, ground truth) as a run inside the run
    `parent_run_id`; what it loaded."""
    return ingest_incidents(conn, settings, [folder], parent_run_id=parent_run_id)
