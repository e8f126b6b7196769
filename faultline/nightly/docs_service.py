"""One docs MCP server for a whole nightly run, shared by every unit on this machine.

`shared_docs_server` starts it over HTTP on 127.0.0.1 behind a token, hands the units settings that point at it and
stops it with the run's analysis; not for the `cluster` runner, and never fatal. Why and how:
docs/nightly.md#the-runs-docs-server.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faultline.config import Settings

START_TIMEOUT_S = 180.0  # the server listens once it has loaded the embedding model; slow on a busy machine
log = logging.getLogger(__name__)


@contextmanager
def shared_docs_server(settings: Settings) -> Iterator[Settings]:
    """`settings` with `docs_mcp_url` pointing at a server started for the block
    (docs/nightly.md#the-runs-docs-server)."""
    if settings.docs_mcp_url or settings.nightly_task_runner == "cluster":
        yield settings
        return
    from pydantic import SecretStr

    from faultline.astra.docs_client import server_command
    from faultline.mcp.docs_server import PARENT_PID_ENV
    from faultline.nightly.lent import close_docs_sessions

    args, env = server_command(settings)
    token = settings.mcp_token.get_secret_value() or secrets.token_urlsafe(32)
    env["FAULTLINE_MCP_TOKEN"] = token  # in the environment: a command line is visible to every user
    env[PARENT_PID_ENV] = str(os.getpid())  # so that a server whose parent died while it started still stops
    with tempfile.TemporaryFile() as errors:
        port = _free_port()
        server = subprocess.Popen([sys.executable, *args, "--http", str(port), "--exit-with-parent"], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                                  start_new_session=True)
        try:
            problem = _wait_listening(server, port)
            if problem:
                errors.seek(0)
                log.warning("the shared docs server did not start (%s); each worker starts its own. %s", problem,
                            errors.read()[-2000:].decode(errors="replace"))
                yield settings
                return
            url = f"http://127.0.0.1:{port}/mcp"
            try:
                yield settings.model_copy(update={"docs_mcp_url": url, "mcp_token": SecretStr(token)})
            finally:
                close_docs_sessions(url)
        finally:
            _stop(server)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_listening(server: subprocess.Popen, port: int) -> str | None:
    """None once `port` accepts connections; else why not (the server exited, or the timeout passed)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return f"it exited with status {server.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return None
        except OSError:
            time.sleep(0.2)
    return f"port {port} not listening after {START_TIMEOUT_S:.0f} s"


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

