"""The nightly run, wiring only: tonight's backlog analysed both ways, evaluated, marts and dashboards refreshed.

Stages, in order: ingest (the corpus, when given one) → index → backlog → analyse → verdict → marts →
dashboards, then the summary artifact. `analyse_backlog` fans out one task run per incident and method on the
task runner the settings choose (threads, local Dask worker processes or a Dask cluster), then one verdict task
run per incident from what both stored; the units read a frozen copy of the warehouse and the flow alone
writes what they bring back (`faultline.nightly.workspace`). The tasks live in `tasks/`; the run's bookkeeping
(the `runs` row, stage times, ledger rows for skips, finished and failed units, the summary) in
`faultline.nightly.night`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from queue import Queue
from typing import Any

from prefect import Task, flow, runtime
from prefect.futures import PrefectFuture
from prefect.task_runners import TaskRunner

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.nightly.backlog import BacklogItem, Method, NetworkBackend
from faultline.nightly.corpus import ingest_corpus
from faultline.nightly.docs_service import shared_docs_server
from faultline.nightly.leftovers import clear_leftovers
from faultline.nightly.night import Harvest, Night
from faultline.nightly.summary import Analysis, markdown
from faultline.nightly.workspace import UnitResult, freeze, thaw
from faultline.runlock import settings_lock
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
    """The task runner the settings ask for: a thread pool, a local Dask cluster of worker processes, or an
    existing Dask scheduler; on Dask, each worker process keeps one Prefect API client for all its task runs
    (`flows.worker_client`)."""
    if settings.nightly_task_runner == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=settings.nightly_workers)
    check_task_runner(settings)
    from flows.worker_client import ReusingDaskTaskRunner

    if settings.nightly_task_runner == "cluster":
        return ReusingDaskTaskRunner(address=settings.nightly_dask_address,
                                     message_log=settings.nightly_dask_message_log)
    return ReusingDaskTaskRunner(cluster_kwargs={"n_workers": settings.nightly_workers, "processes": True,
                                                 "threads_per_worker": 1, "dashboard_address": None,
                                                 "env": {"PREFECT_API_URL": _api_url()}},
                                 message_log=settings.nightly_dask_message_log)


def _api_url() -> str:
    """The Prefect API this flow reports to (a temporary server's too): the local workers report there, rather
    than each starting a temporary server of its own."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return str(client.api_url).rstrip("/")


def check_task_runner(settings: Settings) -> None:
    """Refuse a task runner that cannot start, before the run does anything."""
    if settings.nightly_task_runner == "threads":
        return
    try:
        import prefect_dask  # noqa: F401
    except ImportError as exc:
        raise FaultlineError("the dask task runners need prefect-dask", fix="pip install prefect-dask") from exc
    if settings.nightly_task_runner == "cluster" and not settings.nightly_dask_address:
        raise FaultlineError("the cluster task runner needs the address of a Dask scheduler",
                             fix="set nightly_dask_address (FAULTLINE_NIGHTLY_DASK_ADDRESS, or --dask-address), e.g. "
                             "tcp://127.0.0.1:8786, or use the processes runner")


def analyse_backlog(runner: TaskRunner, items: list[BacklogItem], settings: Settings, analyst: str,
                    llm_model: str | None, network_backend: NetworkBackend, max_rounds: int, run_id: str) -> Analysis:
    """One task run per incident and method, then one verdict task run per incident from what those stored, on
    `runner` (the settings' task runner, started by the caller); failures come back as rows, never as a failed
    flow. Each phase's units read a frozen copy of the warehouse and this flow persists what they bring back.

    Not a subflow: Prefect sends the submitting flow run's context, its parameters included, with every task run,
    and Dask's client and scheduler keep their last thousand messages; a subflow given the backlog made each unit
    carry all of it, and the flow's memory grew with the backlog's square (docs/architecture.md, memory)."""
    night = Night(settings, run_id)
    astra = astra_task.with_options(retries=settings.nightly_llm_retries,
                                    retry_delay_seconds=settings.nightly_llm_retry_delay_s)
    sade = sade_task.with_options(retries=settings.nightly_probe_retries,
                                  retry_delay_seconds=settings.nightly_probe_retry_delay_s)
    sql = {"retries": settings.nightly_sql_retries, "retry_delay_seconds": settings.nightly_sql_retry_delay_s}
    started = time.perf_counter()
    with shared_docs_server(unit_settings(settings)) as shared:  # the units' settings: one docs server for the run
        analysis = _phase(night, runner, "analyse", items, lambda frozen: [
            *_fan_out(astra, "astra", items, settings=shared, run_id=run_id, analyst=analyst,
                      max_rounds=max_rounds, frozen=frozen),
            *_fan_out(sade, "sade", items, settings=shared, run_id=run_id, network_backend=network_backend,
                      llm_model=llm_model, frozen=frozen)], Analysis())
        middle = time.perf_counter()
        analysis = _phase(night, runner, "verdict", items, lambda frozen: _fan_out(
            verdict_task.with_options(**sql), "verdict", items, settings=shared, analyst=analyst,
            network_backend=network_backend, run_id=run_id, frozen=frozen), analysis)
    analysis.stage_seconds = {"analyse": middle - started, "verdict": time.perf_counter() - middle}
    return analysis


def unit_settings(settings: Settings) -> Settings:
    """The settings the analysis units (and the docs server they share) run with: one torch thread each unless
    `embedding_threads` says otherwise. Units embed one short text at a time, `nightly_workers` of them at once
    beside the docs server, so torch's default of a thread per core only has them contend for the same cores
    (CPU per analysis, measured in docs/architecture.md)."""
    return settings if settings.embedding_threads else settings.model_copy(update={"embedding_threads": 1})


Unit = tuple[Task, Method, BacklogItem, dict[str, Any]]  # a task to submit, what for, and its keyword arguments


def _phase(night: Night, runner: TaskRunner, name: str, items: list[BacklogItem],
           units: Callable[[str], list[Unit]], analysis: Analysis) -> Analysis:
    """Freeze the warehouse, run the phase's units on it, persist them as they finish, remove the copy."""
    wanted = {"analyse": {"astra", "sade"}, "verdict": {"verdict"}}[name]
    if not any(set(item.todo) & wanted for item in items):
        return analysis
    with closing(night.cursor()) as cursor:
        frozen = freeze(cursor, night.settings, f"{night.run_id}-{name}")
    try:
        todo = units(str(frozen))
        harvest = Harvest(night, total=len(todo), analysis=analysis)
        _run_window(runner, todo, harvest, night.settings.nightly_in_flight or 4 * night.settings.nightly_workers)
        harvest.flush()
        return harvest.analysis
    finally:
        thaw(frozen)


def _run_window(runner: TaskRunner, units: list[Unit], harvest: Harvest, window: int) -> None:
    """Submit the units `window` at a time, one more as each finishes: the task runner, its futures and the
    results waiting to be persisted hold a few units per worker, never the whole backlog."""
    finished: Queue[PrefectFuture] = Queue()
    in_flight: dict[PrefectFuture, tuple[Method, BacklogItem]] = {}
    waiting = iter(units)

    def submit_next() -> bool:
        unit = next(waiting, None)
        if unit is None:
            return False
        task, method, item, options = unit
        future = runner.submit(task, {"item": item, **options})
        in_flight[future] = (method, item)
        future.add_done_callback(finished.put)
        return True

    while len(in_flight) < window and submit_next():
        pass
    while in_flight:
        future = finished.get()
        method, item = in_flight.pop(future)
        harvest.take(method, item, _result_or_error(future))
        submit_next()


def _fan_out(unit: Task, method: Method, items: list[BacklogItem], **same: Any) -> list[Unit]:
    """One unit per item that still needs `method`; the keyword arguments are the same for every one."""
    return [(unit, method, item, same) for item in items if method in item.todo]


def _result_or_error(future: PrefectFuture) -> UnitResult | BaseException:
    """What a finished task run brought back: its result, or what it failed with."""
    result = future.result(raise_on_failure=False)
    if isinstance(result, (UnitResult, BaseException)):
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
    check_task_runner(settings)
    analyst = f"llm:{llm_model}" if llm_model else "deterministic"
    sql = {"retries": settings.nightly_sql_retries, "retry_delay_seconds": settings.nightly_sql_retry_delay_s}
    flow_run_id = str(runtime.flow_run.id) if runtime.flow_run.id else None
    with settings_lock(settings, "nightly run"), Night.begin(settings, prefect_flow_run_id=flow_run_id) as run:
        with closing(run.cursor()) as cursor:  # a killed run's `running` row and frozen copies
            clear_leftovers(cursor, settings, run.run_id)
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
        work = [item for item in items if item.todo]
        with run.stage("analyse", f"analysing {len(work)} incident(s) both ways, then one verdict each"):
            analysis = Analysis()
            if work:
                with make_task_runner(settings) as runner:
                    analysis = analyse_backlog(runner, work, settings, analyst, llm_model, network_backend,
                                               max_rounds, run.run_id)
        if analysis.stage_seconds:  # the analysis's own split; the runner's start-up counts as analysis
            run.stage_seconds["verdict"] = analysis.stage_seconds["verdict"]
            run.stage_seconds["analyse"] -= analysis.stage_seconds["verdict"]
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
