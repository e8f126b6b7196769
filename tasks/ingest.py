"""Prefect tasks wrapping the ingest engine: one task run per file, visible in the UI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from faultline.config import Settings
from faultline.ingest.api import FileReport, ingest_one


@task(name="ingest-file", cache_policy=NO_CACHE, task_run_name="ingest {kind}: {path.name}")
def ingest_file_task(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, path: Path, *,
                     run_id: str | None, force: bool = False, **options: Any) -> FileReport:
    """Ingest one file; failures come back as a failed FileReport (and a run_failures row)."""
    return ingest_one(conn, settings, kind, path, run_id=run_id, force=force, **options)


@task(name="ingest-incidents", cache_policy=NO_CACHE, task_run_name="ingest incidents: {folder.name}")
def ingest_incidents_task(conn: duckdb.DuckDBPyConnection, settings: Settings, folder: Path) -> dict[str, Any]:
    """Ingest one generated corpus folder (tickets, device logs, snapshots, ground truth); the report as a dict."""
    from faultline.ingest.incidents import ingest_incidents

    return ingest_incidents(conn, settings, [folder]).as_dict()
