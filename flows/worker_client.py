"""One Prefect API client per Dask worker process, shared by every task run the worker executes.

Prefect 3.9 builds two new API clients for every task run on a Dask worker and offers no hook around one, so
`ReuseApiClient`, a Dask worker plugin, patches `SyncClientContext.get` in its worker processes to fall back to
one open client per API; the measurements, and when to drop it: docs/dependencies.md#prefect.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Self

import dask
from distributed import Worker
from distributed.diagnostics.plugin import WorkerPlugin
from prefect.client.orchestration import SyncPrefectClient
from prefect.context import SettingsContext, SyncClientContext
from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_KEY, PREFECT_API_URL
from prefect_dask import DaskTaskRunner

PLUGIN_NAME = "faultline-reuse-prefect-client"

_lock = threading.Lock()
_shared: dict[tuple[str, Any, Any], SyncClientContext] = {}  # (API URL, auth string, API key) -> open client
_prefect_get = SyncClientContext.get  # ContextModel.get, bound to SyncClientContext


def _get_or_shared(cls: type[SyncClientContext]) -> SyncClientContext | None:
    """Prefect's lookup (the client a caller has entered), else this process's open client for the current
    settings' API; None, as Prefect would answer, when no API URL is set (Prefect then starts its own server)."""
    entered = _prefect_get()
    if entered is not None:
        return entered
    api = PREFECT_API_URL.value()
    if not api:
        return None
    key = (api, PREFECT_API_AUTH_STRING.value(), PREFECT_API_KEY.value())
    with _lock:
        if key not in _shared:
            client = SyncPrefectClient(api, auth_string=key[1], api_key=key[2])
            client.__enter__()  # held once for the process: a task run's enter and exit never close it
            settings = SettingsContext.get()
            if settings is None or settings.settings.client.server_version_check_enabled:
                client.raise_for_api_version_mismatch_once()  # what entering a SyncClientContext checks
            # built without __init__, which would ask get_client, which asks this function
            _shared[key] = SyncClientContext.model_construct(client=client)
        return _shared[key]


def install() -> None:
    """Share clients in this process (idempotent)."""
    SyncClientContext.get = classmethod(_get_or_shared)  # type: ignore[method-assign, assignment]


def uninstall() -> None:
    """Back to Prefect's lookup, and close the shared clients."""
    if "get" in SyncClientContext.__dict__:
        del SyncClientContext.get  # the inherited ContextModel.get again
    with _lock:
        for context in _shared.values():
            context.client.__exit__(None, None, None)
        _shared.clear()


class ReuseApiClient(WorkerPlugin):
    """On each worker process: task runs share one open Prefect API client (per API) instead of building two."""

    name = PLUGIN_NAME

    def setup(self, worker: Worker) -> None:
        install()

    def teardown(self, worker: Worker) -> None:
        uninstall()


LOG_LENGTH_KEY = "distributed.admin.low-level-log-length"


def _configured_log_length() -> int:
    return int(dask.config.get(LOG_LENGTH_KEY))


def longer_message_logs(client: Any, wanted: int) -> dict[str, int]:
    """The scheduler and workers of `client`'s cluster whose debugging logs keep more than `wanted` recent
    messages (process -> entries): each of those holds a submitted unit long after it is done."""
    found = {"scheduler": client.run_on_scheduler(_configured_log_length), **client.run(_configured_log_length)}
    return {process: int(length) for process, length in found.items() if int(length) > wanted}


class ReusingDaskTaskRunner(DaskTaskRunner):
    """prefect-dask's task runner, with `ReuseApiClient` on its workers while it runs (a cluster's workers get
    it back out when the runner stops), and Dask's debugging logs of recent messages cut to `message_log` each
    on the connections it opens: the client's, and a local cluster's scheduler and workers (an existing
    cluster's scheduler and workers keep their own configuration: the runner warns when theirs is longer)."""

    def __init__(self, *args: Any, message_log: int = 20, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.message_log = message_log

    def __enter__(self) -> Self:
        # Dask sizes each log when it opens a connection, and a local cluster's workers take the configuration
        # their nanny is started with, so the setting only needs to hold while the runner starts.
        with dask.config.set({"distributed.admin.low-level-log-length": self.message_log}):
            super().__enter__()
            try:
                self.client.register_plugin(ReuseApiClient())  # starts the local cluster, as the first submit would
            except BaseException:
                self.__exit__(*sys.exc_info())
                raise
        if self.address:
            longer = longer_message_logs(self.client, self.message_log)
            if longer:
                self.logger.warning(
                    "the Dask cluster keeps more recent messages than nightly_dask_message_log (%d): %s; each holds "
                    "units long after they finish - start its scheduler and workers with "
                    "DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH=%d (README)", self.message_log,
                    ", ".join(f"{p} {n}" for p, n in sorted(longer.items())), self.message_log)
        return self

    def duplicate(self) -> Self:
        twin = super().duplicate()
        twin.message_log = self.message_log
        return twin

    def __exit__(self, *exc_info: object) -> None:
        if self.address and self._client is not None:  # a cluster outlives the run; a local one closes now
            try:
                self._client.unregister_worker_plugin(PLUGIN_NAME)
            except (OSError, TimeoutError, ValueError) as exc:  # the run is done; workers keep sharing clients
                self.logger.warning("could not remove %s from the Dask workers: %s", PLUGIN_NAME, exc)
        super().__exit__(*exc_info)
