"""Prefect's temporary API server, made to end with the process that started it.

`guard_ephemeral_api` has Prefect start that server through `create_app` below: the same application, plus a
thread that stops it once its parent is gone, which Prefect's exit hook cannot do for a killed run. A configured
server is left alone. The story: docs/dependencies.md#prefect.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

PREFECT_FACTORY = "prefect.server.api.server:create_app"
GUARDED_FACTORY = "flows.ephemeral_api:create_app"
PARENT_PID_ENV = "FAULTLINE_PARENT_PID"
PARENT_POLL_S = 1.0
STOP_GRACE_S = 15.0  # uvicorn's clean shutdown; after that the server exits without it


def guard_ephemeral_api() -> None:
    """Make the temporary API server that Prefect starts in this process end with this process (idempotent;
    nothing to do when a Prefect server is configured)."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from prefect.server.api import server

    launcher = server.SubprocessASGIServer
    if getattr(launcher, "_faultline_guarded", False):
        return
    start_uvicorn = launcher._run_uvicorn_command

    def start_guarded(self: Any) -> Any:
        plain = server.subprocess
        server.subprocess = _GuardedSubprocess(plain)  # only Prefect's server module sees the swap
        try:
            return start_uvicorn(self)
        finally:
            server.subprocess = plain

    launcher._run_uvicorn_command = start_guarded
    launcher._faultline_guarded = True


class _GuardedSubprocess:
    """The `subprocess` module, except that a uvicorn command line naming Prefect's factory names ours."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def Popen(self, args: list[str], **options: Any) -> Any:  # stands in for subprocess.Popen
        if PREFECT_FACTORY in args:
            args = [GUARDED_FACTORY if arg == PREFECT_FACTORY else arg for arg in args]
            options["env"] = {**(options.get("env") or os.environ), PARENT_PID_ENV: str(os.getpid())}
        return self._module.Popen(args, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def create_app() -> Any:
    """Prefect's API application, in a server process that stops once its parent process is gone."""
    # the starter's pid: a parent killed while uvicorn was still importing has already handed us on
    _stop_with_parent(int(os.environ.get(PARENT_PID_ENV) or os.getppid()))
    from prefect.server.api.server import create_app as prefect_app

    return prefect_app()


def _stop_with_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:  # an orphan is handed to init (or a subreaper)
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(STOP_GRACE_S)
        os._exit(0)

    threading.Thread(target=watch, name="faultline-api-parent", daemon=True).start()
