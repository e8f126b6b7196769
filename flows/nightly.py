"""The nightly run, wiring only: ingest → index → backlog → analyse (ASTRA ∥ SADE) → verdict → marts → dashboards,
then the summary artifact. The tasks live in `tasks/`, the run's bookkeeping in `faultline.nightly`, the fan-out
of units on the task runner in `flows.fan_out`."""

from __future__ import annotations

from contextlib import ExitStack, closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, runtime
from prefect.task_runners import TaskRunner

from faultline.config import Settings
from faultline.nightly import lent
from faultline.nightly.backlog import BacklogItem, NetworkBackend
from faultline.nightly.corpus import ingest_corpus
from faultline.nightly.docs_service import shared_docs_server
from faultline.nightly.leftovers import clear_leftovers
from faultline.nightly.run import NightlyRun
from faultline.nightly.summary import Analysis, markdown
from faultline.nightly.units import unit_settings
from faultline.runlock import settings_lock
from flows.fan_out import fan_out, run_stage
from flows.task_runners import check_task_runner, make_task_runner
from tasks.index import sync_index_task
from tasks.ingest import ingest_file_task, ingest_incidents_task
from tasks.nightly import (
    astra_task,
    build_dashboards_task,
    refresh_marts_task,
    sade_task,
    select_backlog_task,
    verdict_task,
)


def _run_name() -> str:
    night = runtime.flow_run.parameters.get("night") if runtime.flow_run.parameters else None
    return f"nightly {night or tonight()}"


@flow(name="faultline-nightly", flow_run_name=_run_name)
def nightly_flow(corpus: str | None = None, limit: int | None = None, incidents: list[str] | None = None,
                 llm_model: str | None = None, network_backend: NetworkBackend = "snapshot", max_rounds: int = 5,
                 settings: Settings | None = None, night: str | None = None) -> dict[str, Any]:
    """Tonight's run; returns the run summary as a dict.

    ``corpus``: a folder to ingest first (history/ and backlog/ of generated incidents; tickets/, logs/ and
    docs/ exports, one task run per file); ``night``: the date in the run's name (default: today, UTC).
    """
    from prefect.artifacts import create_markdown_artifact

    settings = settings or Settings()
    check_task_runner(settings)
    analyst = f"llm:{llm_model}" if llm_model else "deterministic"
    sql = {"retries": settings.nightly_sql_retries, "retry_delay_seconds": settings.nightly_sql_retry_delay_s}
    flow_run_id = str(runtime.flow_run.id) if runtime.flow_run.id else None
    with settings_lock(settings, "nightly run"), NightlyRun.begin(settings, prefect_flow_run_id=flow_run_id) as run:
        with closing(run.cursor()) as cursor:  # a killed run's `running` row and warehouse copies
            clear_leftovers(cursor, settings, run.run_id)
        with run.stage("ingest"):
            ingested = ingest_corpus(run.cursor(), settings, Path(corpus), prefect_flow_run_id=run.prefect_flow_run_id,
                                     ingest_folder=ingest_incidents_task.with_options(**sql),
                                     ingest_file=ingest_file_task, parent_run_id=run.run_id) if corpus else []
        with run.stage("index", "syncing the search indexes"):
            for kind in ("tickets", "docs"):
                sync_index_task.with_options(**sql)(run.cursor(), settings, kind)
        with run.stage("backlog"):
            items = select_backlog_task(settings, analyst, network_backend, incidents, limit)
            run.record_skips(items)
        work = [item for item in items if item.todo]
        analysis = Analysis()
        with ExitStack() as running:
            with run.stage("analyse", f"analysing {len(work)} incident(s) both ways, then one verdict each"):
                if work:
                    runner = running.enter_context(make_task_runner(settings))
                    shared = running.enter_context(shared_docs_server(unit_settings(settings)))
                    running.callback(lent.close_all)
                    analysis = analyse_stage(run, runner, work, shared, analyst, llm_model, network_backend, max_rounds)
            if work:
                with run.stage("verdict"):
                    analysis = verdict_stage(run, runner, work, shared, analyst, network_backend, analysis)
        with run.stage("marts", "refreshing the marts and the dashboards"):
            marts = refresh_marts_task.with_options(**sql)(settings)
        with run.stage("dashboards"):
            dashboard = build_dashboards_task(settings)
        summary = run.summary(ingest=ingested, backlog=len(items), analysis=analysis, marts=marts,
                              dashboard=dashboard)
        create_markdown_artifact(markdown=markdown(summary), key="nightly-summary",
                                 description=f"Faultline nightly run {run.run_id}")
        run.finish(summary)
        return summary.model_dump(mode="json")


def analyse_stage(run: NightlyRun, runner: TaskRunner, items: list[BacklogItem], settings: Settings, analyst: str,
            llm_model: str | None, network_backend: NetworkBackend, max_rounds: int) -> Analysis:
    """ASTRA and SADE on every incident that needs them: one task run each, on a copy of the warehouse.

    Not a subflow: Prefect sends the submitting flow run's parameters with every task run, so a subflow given the
    backlog made each unit carry all of it (docs/benchmarks.md, the nightly's memory)."""
    astra = astra_task.with_options(retries=settings.nightly_llm_retries,
                                    retry_delay_seconds=settings.nightly_llm_retry_delay_s)
    sade = sade_task.with_options(retries=settings.nightly_probe_retries,
                                  retry_delay_seconds=settings.nightly_probe_retry_delay_s)
    return run_stage(run, runner, "analyse", items, {"astra", "sade"}, lambda copy: [
        *fan_out(astra, "astra", items, settings=settings, run_id=run.run_id, analyst=analyst, max_rounds=max_rounds,
                 warehouse_copy=copy),
        *fan_out(sade, "sade", items, settings=settings, run_id=run.run_id, network_backend=network_backend,
                 llm_model=llm_model, warehouse_copy=copy)], Analysis())


def verdict_stage(run: NightlyRun, runner: TaskRunner, items: list[BacklogItem], settings: Settings, analyst: str,
         network_backend: NetworkBackend, analysis: Analysis) -> Analysis:
    """One verdict per incident from what ASTRA and SADE stored: one task run each, on a new copy."""
    verdict = verdict_task.with_options(retries=settings.nightly_sql_retries,
                                        retry_delay_seconds=settings.nightly_sql_retry_delay_s)
    return run_stage(run, runner, "verdict", items, {"verdict"}, lambda copy: fan_out(
        verdict, "verdict", items, settings=settings, analyst=analyst, network_backend=network_backend,
        run_id=run.run_id, warehouse_copy=copy), analysis)


def tonight() -> str:
    """The run's name: today's UTC date."""
    return datetime.now(UTC).date().isoformat()
