"""The nightly run: tonight's backlog analysed both ways, evaluated, marts refreshed — wiring only.

`nightly_flow` ingests the corpus when given one, refreshes the search indexes, selects the backlog
(`faultline.nightly.backlog`: open incidents not analysed yet or changed since), records the skips, fans
out one task run per incident and method in the `analyse-backlog` subflow (thread pool or in-process
Dask, `nightly_task_runner`), turns every failed task into a `run_failures` row and a ``failed`` ledger
entry, refreshes the SQL marts, rebuilds the static dashboards and leaves a Markdown artifact with
the run summary.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prefect import flow, runtime, task, unmapped
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.nightly.backlog import BacklogItem
from faultline.nightly.summary import Failure, NightSummary, Skip, markdown
from faultline.nightly.work import Outcome
from tasks.nightly import astra_task, sade_task


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


@task(name="select-backlog", cache_policy=NO_CACHE)
def select_backlog_task(settings: Settings, analyst: str, network_backend: str, incidents: list[str] | None,
                        limit: int | None) -> list[BacklogItem]:
    """Open incidents with work left tonight."""
    from faultline.db import shared_warehouse
    from faultline.nightly.backlog import select_backlog

    return select_backlog(shared_warehouse(settings).cursor(), analyst=analyst, network_backend=network_backend,
                          incidents=incidents, limit=limit)


@task(name="refresh-marts", cache_policy=NO_CACHE)
def refresh_marts_task(settings: Settings) -> dict[str, int]:
    """Rebuild every SQL mart; mart -> rows."""
    from faultline.db import shared_warehouse
    from faultline.marts import refresh_marts

    return {r.name: r.rows for r in refresh_marts(shared_warehouse(settings).cursor(), settings)}


@task(name="build-dashboards", cache_policy=NO_CACHE)
def build_dashboards_task(settings: Settings) -> str:
    """Write the static dashboard site from the marts; the path of its index page."""
    from dashboards.build import build_dashboards
    from faultline.db import shared_warehouse

    out = settings.dashboards_dir or Path(settings.duckdb_path).parent / "dashboards"
    return str(build_dashboards(shared_warehouse(settings).cursor(), Path(out)).index)


@flow(name="faultline-analyse-backlog", flow_run_name="analyse {count} incident(s)")
def analyse_backlog(items: list[BacklogItem], settings: Settings, analyst: str, llm_model: str | None,
                    network_backend: str, max_rounds: int, run_id: str, count: int) -> dict[str, Any]:
    """One task run per incident and method; failures come back as rows, never as a failed flow."""
    from faultline.db import shared_warehouse
    from faultline.nightly import ledger
    from faultline.nightly.progress import report
    from faultline.runs import record_failure

    astra = astra_task.with_options(retries=settings.nightly_llm_retries,
                                    retry_delay_seconds=settings.nightly_llm_retry_delay_s)
    sade = sade_task.with_options(retries=settings.nightly_probe_retries,
                                  retry_delay_seconds=settings.nightly_probe_retry_delay_s)
    jobs: dict[Any, tuple[str, BacklogItem]] = {}
    for method, runner, extra in (("astra", astra, {"analyst": unmapped(analyst), "max_rounds": unmapped(max_rounds)}),
                                  ("sade", sade, {"network_backend": unmapped(network_backend),
                                                  "llm_model": unmapped(llm_model)})):
        todo = [item for item in items if method in item.todo]
        if todo:
            futures = runner.map(todo, settings=unmapped(settings), run_id=unmapped(run_id), **extra)
            jobs.update({future: (method, item) for future, item in zip(futures, todo)})
    outcomes: list[Outcome] = []
    failures: list[Failure] = []
    cursor = shared_warehouse(settings).cursor()
    for done, future in enumerate(as_completed(list(jobs)), start=1):
        method, item = jobs[future]
        result = future.result(raise_on_failure=False)
        if isinstance(result, Outcome):
            outcomes.append(result)
            report(f"{method} {item.incident_id}: {result.label or 'no fault named'} ({result.seconds:.1f} s)",
                   done, len(jobs))
            continue
        exc = result if isinstance(result, BaseException) else RuntimeError(f"task ended {future.state.name}")
        record_failure(cursor, run_id=run_id, stage=method, subject=item.incident_id, exc=exc)
        ledger.record(cursor, item.incident_id, method, item.digests[method], "failed", reason=str(exc)[:500],
                      run_id=run_id)
        failures.append(Failure(incident_id=item.incident_id, method=method, error_type=type(exc).__name__,
                                message=str(exc)))
        report(f"{method} {item.incident_id}: FAILED {type(exc).__name__}", done, len(jobs))
    cursor.close()
    return {"outcomes": outcomes, "failures": failures}


def _run_name() -> str:
    night = runtime.flow_run.parameters.get("night") if runtime.flow_run.parameters else None
    return f"nightly {night or tonight()}"


@flow(name="faultline-nightly", flow_run_name=_run_name)
def nightly_flow(corpus: str | None = None, limit: int | None = None, incidents: list[str] | None = None,
                 llm_model: str | None = None, network_backend: str = "snapshot", max_rounds: int = 5,
                 settings: Settings | None = None, night: str | None = None) -> dict[str, Any]:
    """Tonight's run (see the module docstring); returns the run summary as a dict."""
    from prefect.artifacts import create_markdown_artifact

    from faultline.db import release_shared_warehouse, shared_warehouse
    from faultline.nightly import ledger
    from faultline.nightly.progress import stage
    from faultline.runs import finish_run, start_run
    from tasks.index import sync_index_task
    from tasks.ingest import ingest_incidents_task

    settings = settings or Settings()
    if network_backend not in ("snapshot", "lab"):
        raise FaultlineError(f"unknown network backend {network_backend!r}", fix="use snapshot or lab")
    analyst = f"llm:{llm_model}" if llm_model else "deterministic"
    conn = shared_warehouse(settings)
    flow_run_id = str(runtime.flow_run.id) if runtime.flow_run.id else None
    run_id = start_run(conn.cursor(), "nightly", settings=settings, prefect_flow_run_id=flow_run_id)
    stages: dict[str, float] = {}
    sql = {"retries": settings.nightly_sql_retries, "retry_delay_seconds": settings.nightly_sql_retry_delay_s}
    try:
        t0 = time.perf_counter()
        if corpus:
            root = Path(corpus)
            if not root.is_dir():
                raise FaultlineError(f"{corpus} is not a folder", fix="give a corpus folder such as data/sample")
            ingest = ingest_incidents_task.with_options(**sql)
            for part in ("history", "backlog"):
                if (root / part).is_dir():
                    stage(f"ingesting {part} ({root / part})")
                    ingest(conn.cursor(), settings, root / part)
            docs = root / "docs"
            if docs.is_dir():
                from faultline.ingest.api import ingest_paths

                ingest_paths(conn.cursor(), settings, "docs", [docs], prefect_flow_run_id=flow_run_id)
        stages["ingest"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        stage("syncing the search indexes")
        for kind in ("tickets", "docs"):
            sync_index_task.with_options(**sql)(conn.cursor(), settings, kind)
        stages["index"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        items = select_backlog_task(settings, analyst, network_backend, incidents, limit)
        skips = []
        cursor = conn.cursor()
        for item in items:
            for method, reason in item.skips.items():
                ledger.record(cursor, item.incident_id, method, item.digests[method], "skipped", reason=reason,
                              run_id=run_id)
                skips.append(Skip(incident_id=item.incident_id, method=method, reason=reason))
        cursor.close()
        stages["backlog"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        work = [i for i in items if i.todo]
        stage(f"analysing {len(work)} incident(s) both ways")
        result = analyse_backlog.with_options(task_runner=make_task_runner(settings))(
            work, settings, analyst, llm_model, network_backend, max_rounds, run_id,
            len(work)) if work else {"outcomes": [], "failures": []}
        stages["analyse"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        stage("refreshing the marts and the dashboards")
        marts = refresh_marts_task.with_options(**sql)(settings)
        stages["marts"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        dashboard = build_dashboards_task(settings)
        stages["dashboards"] = time.perf_counter() - t0
        summary = NightSummary(run_id=run_id, prefect_flow_run_id=flow_run_id, backlog=len(items),
                               outcomes=result["outcomes"], failures=result["failures"], skips=skips, marts=marts,
                               dashboard=dashboard, stage_seconds={k: round(v, 2) for k, v in stages.items()})
        create_markdown_artifact(markdown=markdown(summary), key="nightly-summary",
                                 description=f"Faultline nightly run {run_id}")
        finish_run(conn.cursor(), run_id, status="completed_with_failures" if summary.failures else "completed",
                   stats={"backlog": len(items), "per_method": summary.per_method()})
        return summary.model_dump(mode="json")
    except BaseException as exc:
        finish_run(conn.cursor(), run_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        release_shared_warehouse(settings)


def tonight() -> str:
    """The run's name: today's UTC date."""
    return datetime.now(timezone.utc).date().isoformat()
