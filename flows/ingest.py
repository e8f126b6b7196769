"""The ingest flow: `faultline ingest KIND PATH... --flow`, or deployed from prefect.yaml."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

from prefect import flow, runtime

from faultline import db
from faultline.config import Settings
from faultline.ingest.api import ingest_paths
from faultline.runlock import settings_lock
from tasks.ingest import ingest_file_task


@flow(name="ingest", flow_run_name="ingest {kind}")
def ingest_flow(kind: str, paths: list[str], settings: Settings | None = None, force: bool = False,
                mapping_file: str | None = None, log_format: str | None = None,
                incident_id: str | None = None) -> dict[str, Any]:
    """Ingest files or folders of one kind; each file is a task run. Returns the report as a dict."""
    settings = settings or Settings()
    options: dict[str, Any] = {}
    if kind == "tickets":
        options["mapping_file"] = Path(mapping_file) if mapping_file else None
    elif kind == "logs":
        options.update(log_format=log_format, incident_id=incident_id)
    with settings_lock(settings, f"ingest {kind}"), closing(db.open_warehouse(settings)) as conn:
        report = ingest_paths(
            conn, settings, kind, [Path(p) for p in paths], force=force,
            prefect_flow_run_id=str(runtime.flow_run.id), per_file=ingest_file_task, **options,
        )
    return report.as_dict()
