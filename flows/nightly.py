"""The nightly run, wiring only: tonight's backlog analysed both ways, evaluated, marts and dashboards refreshed.

Stages, in order: ingest (the corpus, when given one) → index → backlog → analyse → verdict → marts →
dashboards, then the summary artifact. `analyse_backlog` fans out one task run per incident and method on the
task runner the settings choose (thread pool or in-process Dask); `fuse_verdicts` then one verdict task run per
incident from what both stored. The tasks live in `tasks/`; the run's bookkeeping
(the `runs` row, stage times, ledger rows for skips, finished and failed units, the summary) in
`faultline.nightly.night`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import Task, flow, runtime, unmapped
from prefect.futures import PrefectFuture, as_completed

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.nightly.backlog import BacklogItem, Method, NetworkBackend
from faultline.nightly.corpus import ingest_corpus
from faultline.nightly.night import Harvest, Night
from faultline.nightly.summary import Analysis, markdown
from faultline.nightly.work import Outcome
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


def make_task_runner(settings: Settings) -> Any:
    """The task runner the settings ask for: a thread pool, or a local in-process Dask cluster."""
    if settings.nightly_task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as exc:
            raise FaultlineError("the dask task runner needs prefect-dask", fix="pip install prefect-dask") from exc
        # processes=False: the warehouse is one DuckDB file with a single writer (this process)
        return DaskTaskRunner(cluster_kwargs={"n_workers": 1, "processes": False,
                                              "threads_per_worker": settings.nightly_workers,
                                              "dashboard_address": "127.0.0.1:0"})
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=settings.nightly_workers)


@flow(name="faultline-analyse-backlog", flow_run_name="analyse {count} incident(s)")
def analyse_backlog(items: list[BacklogItem], settings: Settings, analyst: str, llm_model: str | None,
                    network_backend: NetworkBackend, max_rounds: int, run_id: str, count: int) -> Analysis:
    """One task run per incident and method; failures come back as rows, never as a failed flow."""
    astra = astra_task.with_options(retries=settings.nightly_llm_retries,
                                    retry_delay_seconds=settings.nightly_llm_retry_delay_s)
    sade = sade_task.with_options(retries=settings.nightly_probe_retries,
                                  retry_delay_seconds=settings.nightly_probe_retry_delay_s)
    jobs = {**_fan_out(astra, "astra", items, settings=settings, run_id=run_id, analyst=analyst,
                       max_rounds=max_rounds),
            **_fan_out(sade, "sade", items, settings=settings, run_id=run_id, network_backend=network_backend,
                       llm_model=llm_model)}
    harvest = Harvest(Night(settings, run_id), total=len(jobs))
    for future in as_completed(list(jobs)):
        method, item = jobs[future]
        harvest.take(method, item, _outcome_or_error(future))
    return harvest.analysis


def fuse_verdicts(items: list[BacklogItem], settings: Settings, analyst: str, network_backend: NetworkBackend,
                  run_id: str, analysis: Analysis) -> Analysis:
    """One verdict task run per incident that needs one, after its analyses; outcomes join tonight's analysis."""
    sql = {"retries": settings.nightly_sql_retries, "retry_delay_seconds": settings.nightly_sql_retry_delay_s}
    jobs = _fan_out(verdict_task.with_options(**sql), "verdict", items, settings=settings, analyst=analyst,
                    network_backend=network_backend, run_id=run_id)
    harvest = Harvest(Night(settings, run_id), total=len(jobs), analysis=analysis)
    for future in as_completed(list(jobs)):
        method, item = jobs[future]
        harvest.take(method, item, _outcome_or_error(future))
    return harvest.analysis


def _fan_out(unit: Task, method: Method, items: list[BacklogItem],
             **same: Any) -> dict[PrefectFuture, tuple[Method, BacklogItem]]:
    """One task run per item that still needs `method`; the keyword arguments are the same for every run."""
    todo = [item for item in items if method in item.todo]
    if not todo:
        return {}
    futures = unit.map(todo, **{name: unmapped(value) for name, value in same.items()})
    return {future: (method, item) for future, item in zip(futures, todo)}


def _outcome_or_error(future: PrefectFuture) -> Outcome | BaseException:
    """What a finished task run brought back: its outcome, or what it failed with."""
    result = future.result(raise_on_failure=False)
    if isinstance(result, (Outcome, BaseException)):
        return result
    return RuntimeError(f"task ended {future.state.name}")


def _run_name() -> str:
    night = runtime.flow_run.parameters.get("night") if runtime.flow_run.parameters else None
    return f"nightly {night or tonight()}"


@flow(name="faultline-nightly", flow_run_name=_run_name)
def nightly_flow(corpus: str | None = None, limit: int | None = None, incidents: list[str] | None = None,
                 llm_model: str | None = None, network_backend: NetworkBackend = "snapshot", max_rounds: int = 5,
                 settings: Settings | None = None, night: str | None = None) -> dict[str, Any]:
    """Tonight's run (see the module docstring); returns the run summary as a dict.

    ``corpus``: a folder to ingest first (history/ and backlog/ of generated incidents; tickets/, logs/ and
    docs/ exports, one task run per file); ``night``: the date in the run's name (default: today, UTC).
    """
    from prefect.artifacts import create_markdown_artifact

    settings = settings or Settings()
    analyst = f"llm:{llm_model}" if llm_model else "deterministic"
    sql = {"retries": settings.nightly_sql_retries, "retry_delay_seconds": settings.nightly_sql_retry_delay_s}
    with Night.begin(settings, prefect_flow_run_id=str(runtime.flow_run.id) if runtime.flow_run.id else None) as run:
        with run.stage("ingest"):
            ingested = ingest_corpus(run.cursor(), settings, Path(corpus), prefect_flow_run_id=run.prefect_flow_run_id,
                                     ingest_folder=ingest_incidents_task.with_options(**sql),
                                     ingest_file=ingest_file_task) if corpus else []
        with run.stage("index", "syncing the search indexes"):
            for kind in ("tickets", "docs"):
                sync_index_task.with_options(**sql)(run.cursor(), settings, kind)
        with run.stage("backlog"):
            items = select_backlog_task(settings, analyst, network_backend, incidents, limit)
            run.record_skips(items)
        work = [item for item in items if set(item.todo) & {"astra", "sade"}]
        with run.stage("analyse", f"analysing {len(work)} incident(s) both ways"):
            analysis = analyse_backlog.with_options(task_runner=make_task_runner(settings))(
                work, settings, analyst, llm_model, network_backend, max_rounds, run.run_id, len(work),
            ) if work else Analysis()
        with run.stage("verdict", "fusing one verdict per incident"):
            analysis = fuse_verdicts(items, settings, analyst, network_backend, run.run_id, analysis)
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


def tonight() -> str:
    """The run's name: today's UTC date."""
    return datetime.now(UTC).date().isoformat()
