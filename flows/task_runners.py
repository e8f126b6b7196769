"""Where the nightly's units run: a thread pool, a local Dask cluster of worker processes, or an existing Dask
scheduler (`nightly_task_runner`); on Dask, each worker keeps one Prefect API client (`flows.worker_client`)."""

from __future__ import annotations

from typing import Any

from faultline.config import Settings
from faultline.errors import FaultlineError


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


def make_task_runner(settings: Settings) -> Any:
    """The task runner the settings ask for (a context manager: it starts on enter and stops on exit)."""
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
