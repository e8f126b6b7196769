"""Prefect tasks of the nightly run: thin wrappers over `faultline.nightly`, named for the UI.

The analysis tasks run one incident with one method (`astra: <incident>`, `sade: <incident>`, then `verdict:
<incident>`) through `faultline.nightly.units.run_unit` on a copy of the warehouse (a path every worker can read)
and return the rows for the flow to store: a task may run in another process or machine and never writes the
warehouse. The flow sets retries per kind of work (`with_options`).
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from faultline.config import Settings
from faultline.db import shared_warehouse
from faultline.nightly.backlog import BacklogItem, NetworkBackend
from faultline.nightly.units import run_unit
from faultline.nightly.workspace import UnitResult


@task(name="select-backlog", cache_policy=NO_CACHE)
def select_backlog_task(settings: Settings, analyst: str, network_backend: NetworkBackend,
                        incidents: list[str] | None, limit: int | None) -> list[BacklogItem]:
    """Open incidents with work left tonight."""
    from faultline.nightly.backlog import select_backlog

    with closing(shared_warehouse(settings).cursor()) as cursor:
        return select_backlog(cursor, analyst=analyst, network_backend=network_backend, incidents=incidents,
                              limit=limit)


@task(name="astra", cache_policy=NO_CACHE, task_run_name="astra: {item.incident_id}")
def astra_task(item: BacklogItem, settings: Settings, analyst: str, max_rounds: int, run_id: str,
               warehouse_copy: str) -> UnitResult:
    """ASTRA's report for one incident (scored when the truth is known): its rows, for the flow to store."""
    return run_unit(settings, run_id, item, "astra", Path(warehouse_copy), analyst=analyst, max_rounds=max_rounds)


@task(name="sade", cache_policy=NO_CACHE, task_run_name="sade: {item.incident_id}")
def sade_task(item: BacklogItem, settings: Settings, network_backend: NetworkBackend, llm_model: str | None,
              run_id: str, warehouse_copy: str) -> UnitResult:
    """SADE's diagnosis for one incident (scored when the truth is known): its rows, for the flow to store."""
    return run_unit(settings, run_id, item, "sade", Path(warehouse_copy), network_backend=network_backend,
                    llm_model=llm_model)


@task(name="verdict", cache_policy=NO_CACHE, task_run_name="verdict: {item.incident_id}")
def verdict_task(item: BacklogItem, settings: Settings, analyst: str, network_backend: NetworkBackend,
                 run_id: str, warehouse_copy: str) -> UnitResult:
    """One verdict from the incident's stored analyses, refined on its network (scored when the truth is known):
    its rows, for the flow to store."""
    return run_unit(settings, run_id, item, "verdict", Path(warehouse_copy), analyst=analyst,
                    network_backend=network_backend)


@task(name="refresh-marts", cache_policy=NO_CACHE)
def refresh_marts_task(settings: Settings) -> dict[str, int]:
    """Rebuild every SQL mart; mart -> rows."""
    from faultline.marts import refresh_marts

    with closing(shared_warehouse(settings).cursor()) as cursor:
        return {mart.name: mart.rows for mart in refresh_marts(cursor, settings)}


@task(name="build-dashboards", cache_policy=NO_CACHE)
def build_dashboards_task(settings: Settings) -> str:
    """Write the static dashboard site from the marts; the path of its index page."""
    from dashboards.build import build_dashboards

    with closing(shared_warehouse(settings).cursor()) as cursor:
        return str(build_dashboards(cursor, settings.dashboards_folder()).index)
