"""Prefect tasks of the nightly run: one task run per incident and method, named after the incident.

Each task takes a cursor of the process's shared warehouse connection (`faultline.db.shared_warehouse`),
runs one unit of `faultline.nightly.work` and, on success, records its ledger row. Retries are set per
kind of work by the flow (`with_options`): ASTRA's LLM calls, SADE's probes.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from faultline.config import Settings
from faultline.nightly.backlog import BacklogItem
from faultline.nightly.work import Outcome


@task(name="astra", cache_policy=NO_CACHE, task_run_name="astra: {item.incident_id}")
def astra_task(item: BacklogItem, settings: Settings, analyst: str, max_rounds: int, run_id: str) -> Outcome:
    """ASTRA's report for one incident (stored, scored when the truth is known)."""
    from faultline.db import shared_warehouse
    from faultline.nightly import ledger
    from faultline.nightly.work import run_astra

    cursor = shared_warehouse(settings).cursor()
    try:
        outcome = run_astra(settings, cursor, item, analyst=analyst, max_rounds=max_rounds, run_id=run_id)
        ledger.record(cursor, item.incident_id, "astra", item.digests["astra"], "done", run_id=run_id,
                      seconds=outcome.seconds)
        return outcome
    finally:
        cursor.close()


@task(name="sade", cache_policy=NO_CACHE, task_run_name="sade: {item.incident_id}")
def sade_task(item: BacklogItem, settings: Settings, network_backend: str, llm_model: str | None,
              run_id: str) -> Outcome:
    """SADE's diagnosis for one incident (stored, scored when the truth is known)."""
    from faultline.db import shared_warehouse
    from faultline.nightly import ledger
    from faultline.nightly.work import run_sade

    cursor = shared_warehouse(settings).cursor()
    try:
        outcome = run_sade(settings, cursor, item, network_backend=network_backend, llm_model=llm_model,
                           run_id=run_id)
        ledger.record(cursor, item.incident_id, "sade", item.digests["sade"], "done", run_id=run_id,
                      seconds=outcome.seconds)
        return outcome
    finally:
        cursor.close()
